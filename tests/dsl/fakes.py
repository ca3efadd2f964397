"""Stand-ins for pyspark objects, recognized the way the DSL recognizes the real ones (by
class name and module), so these tests need no pyspark."""

from __future__ import annotations


class Column:
    def __init__(self, text: str) -> None:
        self._text = text

    def __repr__(self) -> str:
        return f"Column<'{self._text}'>"


Column.__module__ = "pyspark.sql.classic.column"
FakeColumn = Column


def _spark_type(class_name: str, **attrs: object) -> object:
    cls = type(class_name, (), {"__module__": "pyspark.sql.types"})
    obj = cls()
    for key, value in attrs.items():
        setattr(obj, key, value)
    return obj


def _atomic(simple: str) -> object:
    return _spark_type(f"{simple.capitalize()}Type", simpleString=lambda: simple)


def _field(name: str, data_type: object) -> object:
    return _spark_type("StructField", name=name, dataType=data_type)


def fake_struct_type() -> object:
    return _spark_type(
        "StructType",
        fields=[
            _field("id", _atomic("bigint")),
            _field("tags", _spark_type("ArrayType", elementType=_atomic("string"))),
            _field(
                "attrs", _spark_type("MapType", keyType=_atomic("string"), valueType=_atomic("int"))
            ),
            _field(
                "address", _spark_type("StructType", fields=[_field("city", _atomic("string"))])
            ),
            _field("raw", _atomic("binary")),
        ],
    )
