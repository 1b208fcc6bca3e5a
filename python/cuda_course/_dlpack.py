"""DLPack, consumer side: the structures (from the DLPack spec, dlpack.h v0.8 / v1.0 unversioned
layout), the zero-copy extraction of a capsule's pointer, and the checks of an argument.

obj.__dlpack__(stream=s) returns a PyCapsule named "dltensor" holding a DLManagedTensor*. We
BORROW it: the capsule stays alive (held by Arg) for as long as the pointer is used and is never
renamed to "used_dltensor", so the producer's capsule destructor frees it as usual.
"""

import ctypes

KDL_CPU = 1
KDL_CUDA = 2
DEVICE_NAMES = {1: "kDLCPU", 2: "kDLCUDA", 3: "kDLCUDAHost", 4: "kDLOpenCL", 7: "kDLVulkan",
                8: "kDLMetal", 10: "kDLROCM", 13: "kDLCUDAManaged", 14: "kDLOneAPI"}

# (code, bits) of the dtypes the course's kernels take.
DTYPES = {"bfloat16": (4, 16), "float32": (2, 32), "int32": (0, 32), "uint8": (1, 8),
          "float16": (2, 16), "float64": (2, 64), "int64": (0, 64)}
_DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))),
]

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def dtype_name(code, bits, lanes=1):
    name = _DTYPE_NAMES.get((code, bits), f"(code {code}, {bits} bits)")
    return name if lanes == 1 else f"{name} x{lanes}"


class Arg:
    """One checked argument: the capsule (kept alive), its DLManagedTensor*, and what it holds."""

    def __init__(self, name, capsule, address):
        self.name = name
        self.capsule = capsule  # keeps the DLManagedTensor alive while we use it
        self.address = address  # DLManagedTensor*, as an int
        managed = DLManagedTensor.from_address(address)
        t = managed.dl_tensor
        self.device_type = t.device.device_type
        self.device_id = t.device.device_id
        self.dtype = dtype_name(t.dtype.code, t.dtype.bits, t.dtype.lanes)
        self.shape = tuple(t.shape[i] for i in range(t.ndim))
        self.strides = None if not t.strides else tuple(t.strides[i] for i in range(t.ndim))
        self.data = (t.data or 0) + t.byte_offset

    @property
    def pointer(self):
        return ctypes.c_void_p(self.address)

    def is_contiguous(self):
        if self.strides is None:
            return True
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


def stream_argument(stream_handle):
    """The value __dlpack__(stream=...) takes for a CUDA stream handle: 1 for the legacy default
    stream (0 is not allowed by the protocol), else the handle itself."""
    return 1 if not stream_handle else int(stream_handle)


def borrow(obj, name, stream_handle=0, require_cuda=True):
    """The DLPack view of `obj` (anything with __dlpack__), without a copy. TypeError if `obj` is
    not a DLPack producer; ValueError if it is not on a CUDA device (with require_cuda)."""
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(
            f"{name}: expected a tensor that supports DLPack (__dlpack__, e.g. a torch.Tensor "
            f"on a CUDA device), got {type(obj).__name__}"
        )
    if hasattr(obj, "__dlpack_device__"):
        device_type, device_id = obj.__dlpack_device__()
        device_type = int(device_type)
        if require_cuda and device_type != KDL_CUDA:
            raise ValueError(
                f"{name}: must be on a CUDA device (DLPack device type {KDL_CUDA}, kDLCUDA), got "
                f"{DEVICE_NAMES.get(device_type, 'device type')} ({device_type}): move it with "
                f".cuda() / .to('cuda')"
            )
    else:
        device_type = None
    if device_type == KDL_CUDA:
        capsule = obj.__dlpack__(stream=stream_argument(stream_handle))
    else:
        capsule = obj.__dlpack__()
    address = _get_pointer(capsule, b"dltensor")
    if not address:
        raise TypeError(f"{name}: __dlpack__() did not return a 'dltensor' capsule")
    arg = Arg(name, capsule, address)
    if require_cuda and arg.device_type != KDL_CUDA:
        raise ValueError(
            f"{name}: must be on a CUDA device (DLPack device type {KDL_CUDA}), got "
            f"{DEVICE_NAMES.get(arg.device_type, 'device type')} ({arg.device_type})"
        )
    return arg


def shape_text(shape):
    """(4, any) for a wanted shape with a free dimension (None)."""
    items = ", ".join("any" if s is None else str(s) for s in shape)
    return f"({items},)" if len(shape) == 1 else f"({items})"


def check(arg, dtype=None, ndim=None, shape=None):
    """ValueError/TypeError naming the argument when it is not what the kernel takes. `shape` may
    hold None for a free dimension."""
    if dtype is not None and arg.dtype != dtype:
        raise TypeError(f"{arg.name}: expected dtype {dtype}, got {arg.dtype}")
    if ndim is not None and len(arg.shape) != ndim:
        raise ValueError(
            f"{arg.name}: expected {ndim} dimensions, got {len(arg.shape)} (shape {arg.shape})"
        )
    if shape is not None:
        if len(shape) != len(arg.shape) or any(
            want is not None and want != got for want, got in zip(shape, arg.shape)
        ):
            raise ValueError(f"{arg.name}: expected shape {shape_text(shape)}, got {arg.shape}")
    if not arg.is_contiguous():
        raise ValueError(
            f"{arg.name}: must be contiguous (row-major, no gaps), got shape {arg.shape} with "
            f"strides {arg.strides}: call .contiguous() first"
        )
    return arg


def same_device(*args):
    devices = {(a.device_type, a.device_id) for a in args}
    if len(devices) > 1:
        listed = ", ".join(f"{a.name} on cuda:{a.device_id}" for a in args)
        raise ValueError(f"all tensors must be on the same CUDA device: {listed}")


class TensorMeta:
    """What the checks need of one tensor (the interface of Arg, without a capsule): read from
    torch.Tensor attributes when it is one (no DLPack capsule is made: the cheap path, for
    callers that hand the tensor itself to TVM-FFI), else from its DLPack view."""

    __slots__ = ("name", "device_type", "device_id", "dtype", "shape", "strides", "data",
                 "_contiguous")

    def __init__(self, obj, name):
        self.name = name
        if type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr"):
            device = obj.device
            self.device_type = {"cuda": KDL_CUDA, "cpu": KDL_CPU}.get(device.type, -1)
            self.device_id = device.index or 0
            self.dtype = str(obj.dtype).replace("torch.", "")
            self.shape = tuple(obj.shape)
            self.strides = tuple(obj.stride())
            self.data = obj.data_ptr()
            self._contiguous = obj.is_contiguous()
            return
        arg = borrow(obj, name, require_cuda=False)
        self.device_type, self.device_id = arg.device_type, arg.device_id
        self.dtype, self.shape, self.strides = arg.dtype, arg.shape, arg.strides
        self.data = arg.data
        self._contiguous = arg.is_contiguous()

    def is_contiguous(self):
        return self._contiguous


def describe(obj, name, require_cuda=True):
    """TensorMeta of `obj`: TypeError if it is not a DLPack producer, ValueError if it is not on
    a CUDA device (with require_cuda), the same messages as borrow()."""
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(
            f"{name}: expected a tensor that supports DLPack (__dlpack__, e.g. a torch.Tensor "
            f"on a CUDA device), got {type(obj).__name__}"
        )
    meta = TensorMeta(obj, name)
    if require_cuda:
        require_cuda_device(meta)
    return meta


def require_cuda_device(arg):
    if arg.device_type != KDL_CUDA:
        raise ValueError(
            f"{arg.name}: must be on a CUDA device (DLPack device type {KDL_CUDA}, kDLCUDA), got "
            f"{DEVICE_NAMES.get(arg.device_type, 'device type')} ({arg.device_type}): move it "
            f"with .cuda() / .to('cuda')"
        )

