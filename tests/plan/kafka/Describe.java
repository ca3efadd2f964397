// The programs of tests/plan/test_kafka_describe.py::KAFKA_PROGRAMS, written with Kafka Streams.
// describe_4.3.1.txt is this program's output with org.apache.kafka:kafka-streams:4.3.1:
//
//   CP=kafka-streams-4.3.1.jar:kafka-clients-4.3.1.jar:slf4j-api-1.7.36.jar
//   java -cp $CP Describe.java > describe_4.3.1.txt
//
// Expressions do not matter to describe(); each program is mirrored step for step in Python.
import org.apache.kafka.streams.*;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.common.utils.Bytes;
import java.util.*;

@SuppressWarnings({"unchecked", "rawtypes"})
public class Describe {
    static void show(String title, StreamsBuilder b) {
        System.out.print("===== " + title + "\n" + b.build().describe().toString());
    }
    static Materialized mat(String name) { return Materialized.as(name); }

    public static void main(String[] args) {
        { StreamsBuilder b = new StreamsBuilder();
          KStream s = b.stream("orders");
          Map<String, KStream> br = s.split(Named.as("orders-"))
              .branch((k, v) -> true, Branched.as("large"))
              .branch((k, v) -> true, Branched.as("medium"))
              .defaultBranch(Branched.as("small"));
          br.get("orders-large").to("large-orders");
          br.get("orders-small").mapValues(v -> v).to("small-orders");
          show("split", b); }
        { StreamsBuilder b = new StreamsBuilder();
          KStream a = b.stream("web").selectKey((k, v) -> v);
          KStream c = b.stream("shop");
          a.merge(c).groupByKey().count().toStream().to("counts");
          show("merge", b); }
        { StreamsBuilder b = new StreamsBuilder();
          b.stream(Arrays.asList("b-topic", "a-topic", "c-topic")).to("out");
          b.globalTable("countries");
          b.stream("x").repartition(Repartitioned.as("by-key").withNumberOfPartitions(3)).to("y");
          show("multi+global+repartition", b); }
        { StreamsBuilder b = new StreamsBuilder();
          KTable u = b.table("users");
          u.filter((k, v) -> true).groupBy((k, v) -> KeyValue.pair(k, v), Grouped.as("users-by-region"))
              .count(mat("users-per-region")).toStream().to("region-counts");
          show("table", b); }
        { StreamsBuilder b = new StreamsBuilder();
          b.stream("orders").filter((k, v) -> true).mapValues(v -> v).filterNot((k, v) -> true).to("out");
          show("chain", b); }
        { StreamsBuilder b = new StreamsBuilder();
          b.stream("orders").selectKey((k, v) -> v).peek((k, v) -> {}).groupByKey().count();
          show("selectkey-groupbykey", b); }
        { StreamsBuilder b = new StreamsBuilder();
          b.stream("orders").mapValues(v -> v).flatMapValues(v -> Arrays.asList(v)).groupByKey().count();
          show("unmarked-groupbykey", b); }
        { StreamsBuilder b = new StreamsBuilder();
          KGroupedStream g = b.stream("orders").groupBy((k, v) -> v, Grouped.as("g"));
          g.count();
          g.reduce((x, y) -> x, mat("reduced"));
          show("groupby-named-shared", b); }
        { StreamsBuilder b = new StreamsBuilder();
          KGroupedTable g = b.table("t").groupBy((k, v) -> KeyValue.pair(k, v));
          g.count();
          g.reduce((x, y) -> x, (x, y) -> x);
          show("table-groupby-unnamed-two", b); }
        { StreamsBuilder b = new StreamsBuilder();
          b.stream("lines").flatMap((k, v) -> Collections.emptyList()).filter((k, v) -> true).peek((k, v) -> {})
              .groupByKey().aggregate(() -> 0, (k, v, a) -> a, Named.as("agg"), mat("agg-store"));
          show("flatmap-aggregate-named", b); }
        { StreamsBuilder b = new StreamsBuilder();
          Map<String, KStream<Object, Object>> br = b.<Object, Object>stream("orders").split().branch((k, v) -> true).branch((k, v) -> true).noDefaultBranch();
          br.get("KSTREAM-BRANCH-00000000011").to("out"); br.get("KSTREAM-BRANCH-00000000012").to("out");
          show("split-unnamed", b); }
        { StreamsBuilder b = new StreamsBuilder();
          b.stream("orders").to("a");
          b.stream("orders").to("b");
          show("same-topic", b); }
        { StreamsBuilder b = new StreamsBuilder();
          b.table("t", Consumed.as("users"), mat("users-store")).toStream(Named.as("changes")).to("out");
          KTable t2 = b.table("t2");
          t2.mapValues(v -> v, mat("mv")).groupBy((k, v) -> KeyValue.pair(k, v)).reduce((x, y) -> x, (x, y) -> x, Named.as("red"), mat("red-store"));
          show("tables-named", b); }
        { StreamsBuilder b = new StreamsBuilder();
          b.stream("orders").map((k, v) -> KeyValue.pair(v, k)).groupByKey().count(Named.as("cnt"));
          b.stream("orders2").selectKey((k, v) -> v).toTable(Named.as("tt"), mat("tt-store")).toStream().to("o");
          show("named-aggregate-totable", b); }
        { StreamsBuilder b = new StreamsBuilder();
          KStream s = b.stream("in");
          KStream m = s.selectKey((k, v) -> v);
          m.groupByKey().count(); 
          m.groupByKey().reduce((x, y) -> x);
          s.filter((k, v) -> true).merge(m).to("out");
          b.globalTable("g1");
          b.stream("late").groupByKey().aggregate(() -> 0, (k, v, a) -> a);
          show("mixed", b); }
        { StreamsBuilder b = new StreamsBuilder();
          b.stream("orders").filter((k, v) -> true).mapValues(v -> v).filterNot((k, v) -> true).to("orders-cents");
          show("snapshot-chain", b); }
        { StreamsBuilder b = new StreamsBuilder();
          b.stream("orders").selectKey((k, v) -> v).mapValues(v -> v).groupByKey().aggregate(() -> 0, (k, v, a) -> a, mat("revenue"));  // our sum()
          show("snapshot-select-key-group-by-key", b); }
        { StreamsBuilder b = new StreamsBuilder();
          b.stream("orders").filter((k, v) -> true).groupByKey().count();
          show("snapshot-group-by-key-unmarked", b); }
        { StreamsBuilder b = new StreamsBuilder();
          b.table("users").groupBy((k, v) -> KeyValue.pair(k, v)).count(mat("users-per-region")).toStream().to("users-per-region");
          show("snapshot-table-group-by-count", b); }
        { StreamsBuilder b = new StreamsBuilder();
          Map<String, KStream<Object, Object>> br = b.<Object, Object>stream("orders").split(Named.as("orders-"))
              .branch((k, v) -> true, Branched.as("large")).branch((k, v) -> true, Branched.as("medium"))
              .defaultBranch(Branched.as("small"));
          br.get("orders-large").to("large-orders");
          br.get("orders-medium").to("medium-orders");
          br.get("orders-small").to("small-orders");
          show("snapshot-split", b); }
        { StreamsBuilder b = new StreamsBuilder();
          KStream web = b.stream("web-orders").selectKey((k, v) -> v);
          KStream merged = web.merge(b.stream("shop-orders"));
          merged.to("all-orders");
          merged.groupByKey().count();
          show("snapshot-merge", b); }
    }
}
