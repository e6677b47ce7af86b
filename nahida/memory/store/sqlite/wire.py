"""What travels between the bot and its store process (`process.py`, `child.py`): frames over a
socket, and in them pickled units of work, their arguments, their results.

A frame is a 4-byte length and a payload. A request's payload is its id (8 bytes) and the
pickled `(kind, write, fn, args)`, the kind `tx` (a store unit), `tx!` (one of a message being
answered, run ahead of the others: `answering`), `conn` (a function of the connection) or a
special request (`child.py`); `CLOSE_ID` with nothing after it stops the child. An answer frame
holds a pickled list of `(id, ok, value)`.

A unit is usually a lambda or a local function, which `pickle` refuses. Here one travels as its
module's name, its code (marshalled once per code object; both processes run the same Python
and the same checkout) and the values of its closure, so what it captures must pickle too: a
unit that captures `self` of a service drags the service along, and fails on its locks. A
function of `__main__` (a script) travels with the globals it names, since the other process
has a `__main__` of its own. Everything else pickles as usual, module-level functions by name;
dataclasses go as their field values (a tuple) and their class's `module:qualname`, which costs a
fraction of pickle's own way (`__getstate__` in Python, with `dataclasses.fields()` on every
call; the class found by import and attribute walk on every load); a UTC datetime as its
fields (~3 µs instead of ~14: pickle saves `timezone.utc` through its `__reduce__`).
"""

from __future__ import annotations

import copyreg
import dataclasses
import importlib
import io
import marshal
import operator
import pickle
import struct
import threading
import types
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from nahida.errors import StorageError

_CODE: dict[types.CodeType, bytes] = {}
_LOADED: dict[bytes, types.CodeType] = {}


class _EmptyCell:
    """A closure cell not yet filled (pickles by reference: the one instance)."""

    def __reduce__(self) -> str:
        return "_EMPTY"


_EMPTY = _EmptyCell()


def _cell(value: Any) -> types.CellType:
    return types.CellType() if value is _EMPTY else types.CellType(value)


def _contents(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY


def _function(
    module: str,
    code: bytes,
    closure: tuple[Any, ...] | None,
    defaults: tuple[Any, ...] | None,
    kwdefaults: dict[str, Any] | None,
    names: dict[str, Any] | None,
) -> types.FunctionType:
    loaded = _LOADED.get(code)
    if loaded is None:
        loaded = _LOADED[code] = marshal.loads(code)
    if names is None:
        namespace = importlib.import_module(module).__dict__
    else:  # a function of the sender's __main__: the globals it names, sent along
        namespace = {"__builtins__": __builtins__, "__name__": module, **names}
    cells = None if closure is None else tuple(_cell(value) for value in closure)
    function = types.FunctionType(loaded, namespace, loaded.co_name, defaults, cells)
    function.__kwdefaults__ = kwdefaults
    return function


def _names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def _by_value(fn: types.FunctionType) -> tuple[Any, ...]:
    code = fn.__code__
    marshalled = _CODE.get(code)
    if marshalled is None:
        marshalled = _CODE[code] = marshal.dumps(code)
    closure = fn.__closure__
    values = None if closure is None else tuple(_contents(cell) for cell in closure)
    names = None
    if fn.__module__ == "__main__":
        scope = fn.__globals__
        names = {name: scope[name] for name in set(_names(code)) if name in scope}
    return (fn.__module__, marshalled, values, fn.__defaults__, fn.__kwdefaults__, names)


def build(cls: type, values: tuple[Any, ...]) -> Any:
    """An instance of dataclass `cls` from its field values in order, each set through its
    slot's own descriptor (frozen ones too: a tenth to a fifth cheaper than the frozen
    `__init__`'s `object.__setattr__`)."""
    fields = _fields(cls)
    assert fields is not None
    obj: Any = object.__new__(cls)
    for set_field, value in zip(fields.setters, values, strict=True):
        set_field(obj, value)  # frozen ones too
    return obj


def _built(name: str, values: tuple[Any, ...]) -> Any:
    """`build` of the class `name` names (`module:qualname`), as an unpickling calls it: the
    class by a lookup here, not by pickle's import and attribute walk (~1 µs a class a load;
    a recall request names six)."""
    cls = _NAMED.get(name)
    if cls is None:
        module, _, qualname = name.partition(":")
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
        cls = _NAMED[name] = found
    return build(cls, values)


@dataclasses.dataclass(frozen=True, slots=True)
class _Fields:
    """How a dataclass travels: a getter of its field values as a tuple, and one setter a field
    (a slot's own descriptor: a third of the time `object.__setattr__` takes)."""

    name: str  # `module:qualname`, for `_built`
    get: Callable[[Any], tuple[Any, ...]]
    setters: tuple[Callable[[Any, Any], None], ...]


# class → how it travels; None: as pickle sends it
_FIELDS: dict[type, _Fields | None] = {}
_NAMED: dict[str, type] = {}  # `_Fields.name` → its class, where one was received


def _fields(cls: type) -> _Fields | None:
    if cls in _FIELDS:
        return _FIELDS[cls]
    found = None
    if dataclasses.is_dataclass(cls) and "__reduce__" not in vars(cls):
        names = tuple(field.name for field in dataclasses.fields(cls))
        if len(names) > 1:  # attrgetter of one name returns the value, not a tuple
            found = _Fields(
                f"{cls.__module__}:{cls.__qualname__}",
                operator.attrgetter(*names),
                tuple(_setter(cls, n) for n in names),
            )
    _FIELDS[cls] = found
    return found


def _setter(cls: type, name: str) -> Callable[[Any, Any], None]:
    for klass in cls.__mro__:
        slot = vars(klass).get(name)
        if isinstance(slot, types.MemberDescriptorType):
            return slot.__set__
    return lambda obj, value: object.__setattr__(obj, name, value)


def _module(name: str) -> types.ModuleType:
    return importlib.import_module(name)


def _utc(
    year: int, month: int, day: int, hour: int, minute: int, second: int, microsecond: int
) -> datetime:
    return datetime(year, month, day, hour, minute, second, microsecond, UTC)


class _Pickler(pickle.Pickler):
    dispatch_table = copyreg.dispatch_table

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        if cls is types.FunctionType:
            if "<" in obj.__qualname__ or obj.__module__ == "__main__":
                return (_function, _by_value(obj))
            return NotImplemented
        if cls is types.ModuleType:
            return (_module, (obj.__name__,))
        if cls is datetime and obj.tzinfo is UTC and not obj.fold:  # a stored turn's time
            return (
                _utc,
                (obj.year, obj.month, obj.day, obj.hour, obj.minute, obj.second, obj.microsecond),
            )
        fields = _fields(cls)
        if fields is None:
            return NotImplemented
        return (_built, (fields.name, fields.get(obj)))


# Beyond this a payload's memo would cost later clears more than a new pickler (~1 µs): 200 rows
# of 4.5 KB left 1.5 µs a payload, 1,000 rows 10 µs.
_RENEW_AFTER = 4096


class _Dumper(threading.local):
    """A thread's pickler and its buffer, kept from one payload to the next: a `_Pickler` costs
    ~1 µs to make (its attributes looked up by the C pickler), as much as pickling a small
    request.

    A pickler's memo keeps the size its largest payload needed, and clearing it walks all of it:
    after one payload of 1,000 rows every later one took 10 µs more, after 20,000 rows 169 µs
    more (a store process that once answered a big read paid that for every answer). So a
    pickler that has written more than `_RENEW_AFTER` bytes is replaced by a new one."""

    def __init__(self) -> None:
        self.buffer = io.BytesIO()
        self.renew()

    def renew(self) -> None:
        self.pickler = _Pickler(self.buffer, protocol=pickle.HIGHEST_PROTOCOL)


_dumper = _Dumper()


def dumps(value: Any) -> bytes:
    buffer, pickler = _dumper.buffer, _dumper.pickler
    buffer.seek(0)
    buffer.truncate()
    pickler.clear_memo()  # each payload stands alone
    pickler.dump(value)
    if buffer.tell() > _RENEW_AFTER:
        _dumper.renew()
    return buffer.getvalue()


loads = pickle.loads


_LENGTH = struct.Struct("!I")
ID = struct.Struct("!Q")
SYNC_ID = 0  # the sync socket carries one request at a time
CLOSE_ID = 2**64 - 1  # a request of no payload: stop once what came before it is answered
# The most one `recv` reads. Python allocates that much for every call and gives back the rest:
# at 1 MiB (above glibc's mmap threshold) that cost ~7 µs a call alone and ~37 µs in the store
# process, several calls a message; at 64 KiB ~1 µs. A larger frame takes a few calls (`Frames`).
RECV_BYTES = 1 << 16


def frame(payload: bytes) -> bytes:
    return _LENGTH.pack(len(payload)) + payload


def request(request_id: int, kind: str, write: bool, fn: Any, args: tuple[Any, ...]) -> bytes:
    """The frame of one request; StorageError if it cannot travel."""
    try:
        payload = dumps((kind, write, fn, args))
    except Exception as exc:  # a unit that captured what cannot travel (a lock, a socket)
        raise StorageError(f"a unit of work could not be sent to the store process: {exc}") from exc
    return frame(ID.pack(request_id) + payload)


CLOSE = frame(ID.pack(CLOSE_ID))


class Frames:
    """Splits a byte stream into frames."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        buffer = self.buffer
        buffer += data
        frames = []
        start, end = 0, len(buffer)
        while end - start >= 4:
            (size,) = _LENGTH.unpack_from(buffer, start)
            if end - start - 4 < size:
                break
            frames.append(bytes(buffer[start + 4 : start + 4 + size]))
            start += 4 + size
        if start:
            del buffer[:start]
        return frames
