"""Kiln's Python model worker: runs the user's model.py for one Kiln worker, fed by the JVM over pipes.

Started by io.kiln.engines.python.impl.PythonProcess as  python3 kiln_worker.py  with the model folder as working
directory. Imports only the standard library and numpy; never pickles anything.

Memory. At start-up the script sets its own /proc/self/oom_score_adj to 1000, so that when memory runs out (a
container's limit, a leaking model) the kernel's OOM killer takes a Python worker before the JVM.

Channel. Frames travel on the process's stdin (JVM -> here) and stdout (here -> JVM). At start-up this
script moves both to private file descriptors and points fd 0 at /dev/null and fd 1 at stderr, so a
print() of the user's (or a native library writing to fd 1) lands in stderr, which Kiln logs line by line,
and can never corrupt a frame.

Frame (version 1), all integers little-endian:
    magic     4 bytes  b"KILN"
    hlen      uint32   length of the header, 1 .. 1 MiB
    header    hlen bytes of UTF-8 JSON, an object:
                "v": 1                 protocol version
                "op": "..."            see below
                "id": int              request id; a reply carries its request's
                "tensors": [{"name", "datatype", "shape", "nbytes"}, ...]   (predict, result)
    payload   the raw bytes of each listed tensor in order, nbytes each, row-major, little-endian
Datatypes: the Open Inference Protocol's fixed-size ones numpy has: BOOL, UINT8..UINT64, INT8..INT64, FP16,
FP32, FP64, and BYTES (BF16 is refused by the JVM before this script starts). A BYTES tensor's payload is its
elements in row-major order, each a uint32 length and that many bytes (nbytes is their total); the model gets
it as a numpy object array of bytes of the tensor's shape, and may return an object array of bytes or str
(str is encoded UTF-8), a numpy S or U array, or a list of those.

Ops, JVM -> here:
    load     {"class", "model_dir", "config", "device", "inputs", "outputs", "streaming"}: import model.py,
             instantiate the class (with "streaming": true it must have predict_stream), call
             load(config, device) and warmup() when it has them  -> loaded | error
    predict  {"tensors"} + payload: one batch, a batched input's first dimension = rows of the whole batch (a
             scalar input is a 0-d array, shape (), once per batch) -> result | error
    stream_open  {"tensors"} + payload: one request; calls predict_stream(inputs), which must return an
             iterator (a generator), and keeps it  -> stream_opened {"stream": int} | error
    stream_next  {"stream"}: advances that generator by one yield  -> chunk {"tensors"} + payload (the yielded
             dict's outputs, as predict's) | stream_end (the generator returned; it is dropped) | error (it
             raised; it is dropped; non-fatal)
    stream_close {"stream"}: closes the generator early (GeneratorExit inside it)  -> stream_closed
    close    -> closed, then exit 0
The JVM pulls one chunk at a time (stream_next), only while the client's reader has room: back-pressure and
cancellation between any two yields, with nothing buffered here.
Ops, here -> JVM:
    loaded   {"python", "numpy", "pid"}
    result   {"tensors", "final": true} + payload: the outputs named as the spec declares them
    stream_opened, chunk, stream_end, stream_closed: see stream_open, stream_next, stream_close
    error    {"error": {"type", "message", "traceback"}, "fatal": bool}: non-fatal = this request failed and
             the worker goes on (predict raised); fatal = this process is about to exit (bad frame, failed
             load)
    closed   {}
"""
import json
import os
import struct
import sys
import traceback

MAGIC = b"KILN"
VERSION = 1
MAX_HEADER = 1 << 20
PREFIX = struct.Struct("<4sI")

_in = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
_out = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
os.dup2(2, 1)
sys.stdin = open(os.devnull, "r")
sys.stdout = sys.stderr

# Out of memory, the kernel kills the process of highest badness (resident size + oom_score_adj): make that this
# worker, which Kiln restarts and whose batch it re-queues, rather than the node's JVM, whose death loses every
# request on the node and its cluster membership. Raising one's own score needs no privilege.
try:
    with open("/proc/self/oom_score_adj", "w") as _adj:
        _adj.write("1000")
except OSError:
    pass  # not Linux, or a sandbox that forbids it: the kernel's own choice stands

import numpy as np  # noqa: E402  (after the redirection: importing may print)

DTYPES = {
    "BOOL": np.dtype("?"), "UINT8": np.dtype("u1"), "UINT16": np.dtype("<u2"), "UINT32": np.dtype("<u4"),
    "UINT64": np.dtype("<u8"), "INT8": np.dtype("i1"), "INT16": np.dtype("<i2"), "INT32": np.dtype("<i4"),
    "INT64": np.dtype("<i8"), "FP16": np.dtype("<f2"), "FP32": np.dtype("<f4"), "FP64": np.dtype("<f8"),
}


class FrameError(Exception):
    """The JVM sent something that is not a version-1 frame: the channel is out of step, so we exit."""


def read_exactly(n, eof_ok=False):
    """n bytes from the JVM; None if eof_ok and the channel ends before the first byte."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = _in.readinto(view[got:])
        if not k:
            if got == 0 and eof_ok:
                return None
            raise FrameError("the JVM's channel closed in the middle of a frame (%d of %d bytes)" % (got, n))
        got += k
    return buf


def read_frame():
    prefix = read_exactly(PREFIX.size, eof_ok=True)
    if prefix is None:
        return None, []
    magic, hlen = PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise FrameError("frame does not start with %r but %r" % (MAGIC, bytes(magic)))
    if not 0 < hlen <= MAX_HEADER:
        raise FrameError("frame header length %d is not in 1..%d" % (hlen, MAX_HEADER))
    try:
        header = json.loads(bytes(read_exactly(hlen)).decode("utf-8"))
    except ValueError as e:
        raise FrameError("frame header is not UTF-8 JSON: %s" % e)
    if not isinstance(header, dict) or header.get("v") != VERSION or not isinstance(header.get("op"), str):
        raise FrameError("frame header is not a version-%d object with an op: %.200r" % (VERSION, header))
    arrays = []
    for t in header.get("tensors", []):
        if t.get("datatype") == "BYTES":
            arrays.append(read_bytes_tensor(t))
            continue
        try:
            dtype = DTYPES[t["datatype"]]
            shape = tuple(int(d) for d in t["shape"])
            nbytes = int(t["nbytes"])
        except (KeyError, TypeError, ValueError) as e:
            raise FrameError("bad tensor entry %.200r: %s" % (t, e))
        if nbytes != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise FrameError("tensor %r: %d bytes do not fit shape %s of %s" % (t.get("name"), nbytes, shape,
                                                                                t["datatype"]))
        arrays.append((t.get("name"), np.frombuffer(read_exactly(nbytes), dtype=dtype).reshape(shape)))
    return header, arrays


LENGTH = struct.Struct("<I")


def read_bytes_tensor(t):
    """A BYTES tensor's payload as an object array of bytes, checking each length against what remains."""
    try:
        shape = tuple(int(d) for d in t["shape"])
        nbytes = int(t["nbytes"])
    except (KeyError, TypeError, ValueError) as e:
        raise FrameError("bad tensor entry %.200r: %s" % (t, e))
    count = int(np.prod(shape, dtype=np.int64))
    if nbytes < 4 * count:
        raise FrameError("tensor %r: %d bytes cannot hold %d BYTES elements" % (t.get("name"), nbytes, count))
    data = bytes(read_exactly(nbytes))
    out = np.empty(count, dtype=object)
    pos = 0
    for i in range(count):
        if nbytes - pos < 4:
            raise FrameError("tensor %r: BYTES element %d has a truncated length" % (t.get("name"), i))
        (n,) = LENGTH.unpack_from(data, pos)
        pos += 4
        if n > nbytes - pos:
            raise FrameError("tensor %r: BYTES element %d claims %d bytes, %d remain" % (t.get("name"), i, n,
                                                                                       nbytes - pos))
        out[i] = data[pos:pos + n]
        pos += n
    if pos != nbytes:
        raise FrameError("tensor %r: %d bytes follow its last BYTES element" % (t.get("name"), nbytes - pos))
    return t.get("name"), out.reshape(shape)


def element_bytes(name, e):
    if isinstance(e, (bytes, bytearray, memoryview)):
        return bytes(e)
    if isinstance(e, str):
        return e.encode("utf-8")
    if isinstance(e, np.bytes_):
        return bytes(e)
    if isinstance(e, np.str_):
        return str(e).encode("utf-8")
    raise TypeError("output %r is BYTES: its elements must be bytes or str, got %s" % (name, type(e).__name__))


def bytes_payload(name, value):
    """The length-prefixed payload of a BYTES output and its shape."""
    a = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
    if a.dtype.kind not in "OSU":
        raise TypeError("output %r is BYTES: return a numpy array of dtype object (bytes or str), S or U, got %s"
                        % (name, a.dtype))
    parts = []
    for e in a.reshape(-1):
        b = element_bytes(name, e)
        parts.append(LENGTH.pack(len(b)))
        parts.append(b)
    return list(a.shape), b"".join(parts)


def write_frame(header, arrays=()):
    header = dict(header, v=VERSION)
    payloads = []
    if arrays:
        entries = []
        for n, d, a in arrays:
            if d == "BYTES":
                shape, data = a
                entries.append({"name": n, "datatype": d, "shape": shape, "nbytes": len(data)})
                payloads.append(data)
            else:
                entries.append({"name": n, "datatype": d, "shape": list(a.shape), "nbytes": a.nbytes})
                payloads.append(memoryview(a.reshape(-1)).cast("B"))  # 1-d: a view with a zero-length dimension cannot be cast
        header["tensors"] = entries
    body = json.dumps(header, separators=(",", ":")).encode("utf-8")
    _out.write(PREFIX.pack(MAGIC, len(body)))
    _out.write(body)
    for p in payloads:
        _out.write(p)
    _out.flush()


def error_reply(req_id, exc, fatal):
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    write_frame({"op": "error", "id": req_id, "fatal": fatal,
                 "error": {"type": type(exc).__name__, "message": str(exc),
                           "traceback": "".join(lines[-12:])}})


class Worker:
    def __init__(self):
        self.model = None
        self.outputs = []
        self.streams = {}
        self.next_stream = 0

    def load(self, h):
        model_dir = h["model_dir"]
        sys.path.insert(0, model_dir)
        import importlib.util
        path = os.path.join(model_dir, "model.py")
        spec = importlib.util.spec_from_file_location("model", path)
        if spec is None:
            raise FileNotFoundError("no model.py in %s" % model_dir)
        module = importlib.util.module_from_spec(spec)
        sys.modules["model"] = module
        spec.loader.exec_module(module)
        cls = getattr(module, h["class"], None)
        if cls is None:
            raise AttributeError("%s defines no class %r" % (path, h["class"]))
        self.model = cls()
        if h.get("streaming"):
            if not callable(getattr(self.model, "predict_stream", None)):
                raise AttributeError("class %r in %s has no predict_stream(self, inputs) method, and the model sets "
                                     "streaming: true" % (h["class"], path))
        elif not callable(getattr(self.model, "predict", None)):
            raise AttributeError("class %r in %s has no predict(self, inputs) method" % (h["class"], path))
        self.outputs = [(o["name"], o["datatype"]) for o in h["outputs"]]
        if hasattr(self.model, "load"):
            self.model.load(h.get("config") or {}, h["device"])
        if hasattr(self.model, "warmup"):
            self.model.warmup()
        return {"python": sys.version.split()[0], "numpy": np.__version__, "pid": os.getpid()}

    def predict(self, arrays):
        return self.outputs_of(self.model.predict({name: a for name, a in arrays}), "predict must return")

    def stream_open(self, arrays):
        it = iter(self.model.predict_stream({name: a for name, a in arrays}))
        self.next_stream += 1
        self.streams[self.next_stream] = it
        return self.next_stream

    def stream_next(self, sid):
        it = self.streams[sid]
        try:
            got = next(it)
        except StopIteration:
            del self.streams[sid]
            return None
        except BaseException:
            del self.streams[sid]
            raise
        try:
            return self.outputs_of(got, "predict_stream must yield")
        except BaseException:
            self.stream_close(sid)
            raise

    def stream_close(self, sid):
        it = self.streams.pop(sid, None)
        if it is not None and hasattr(it, "close"):
            it.close()

    def outputs_of(self, got, what):
        if not isinstance(got, dict):
            raise TypeError("%s a dict of output name -> numpy array, got %s" % (what, type(got).__name__))
        out = []
        for name, datatype in self.outputs:
            if name not in got:
                raise KeyError("predict returned no output %r (it returned %s)" % (name, sorted(got)))
            if datatype == "BYTES":
                out.append((name, datatype, bytes_payload(name, got[name])))
                continue
            # same_kind: float64 -> FP32 is fine, float -> INT32 is a model bug worth an error. np.require, not
            # np.ascontiguousarray: that turns a 0-d array (a scalar output, shape []) into shape (1,).
            a = np.require(np.asarray(got[name]).astype(DTYPES[datatype], casting="same_kind", copy=False),
                           requirements="C")
            out.append((name, datatype, a))
        return out


def main():
    worker = Worker()
    while True:
        try:
            header, arrays = read_frame()
        except FrameError as e:
            error_reply(-1, e, fatal=True)
            sys.exit(2)
        if header is None:
            return  # the JVM closed the channel: it is gone or done with us
        op, req_id = header["op"], header.get("id", -1)
        if op == "load":
            try:
                write_frame(dict(worker.load(header), op="loaded", id=req_id))
            except BaseException as e:  # noqa: B902 -- SystemExit in a model's load is a failed load too
                error_reply(req_id, e, fatal=True)
                sys.exit(3)
        elif op == "predict":
            try:
                out = worker.predict(arrays)
            except Exception as e:
                error_reply(req_id, e, fatal=False)
                continue
            write_frame({"op": "result", "id": req_id, "final": True}, out)
        elif op == "stream_open":
            try:
                sid = worker.stream_open(arrays)
            except Exception as e:
                error_reply(req_id, e, fatal=False)
                continue
            write_frame({"op": "stream_opened", "id": req_id, "stream": sid})
        elif op == "stream_next":
            try:
                out = worker.stream_next(header.get("stream"))
            except Exception as e:
                error_reply(req_id, e, fatal=False)
                continue
            if out is None:
                write_frame({"op": "stream_end", "id": req_id})
            else:
                write_frame({"op": "chunk", "id": req_id}, out)
        elif op == "stream_close":
            try:
                worker.stream_close(header.get("stream"))
            except Exception as e:  # a generator that raises on close: it is gone all the same
                print("predict_stream raised while closing: %r" % (e,), file=sys.stderr)
            write_frame({"op": "stream_closed", "id": req_id})
        elif op == "close":
            write_frame({"op": "closed", "id": req_id})
            return
        else:
            error_reply(req_id, ValueError("op %r is not supported by protocol version %d" % (op, VERSION)),
                        fatal=False)


if __name__ == "__main__":
    main()
