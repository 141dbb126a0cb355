import cProfile, pstats, time, sys, io
import numpy as np
import cuda_core
from cuda_core import texture, typing
from cuda_core.utils import StridedMemoryView
dev = cuda_core.Device(0); dev.set_current()
stream = dev.create_stream()
array = dev.create_opaque_array(texture.OpaqueArrayOptions(shape=(256, 256), format="float32", num_channels=1, is_surface_load_store=True))
resource = texture.ResourceDescriptor.from_opaque_array(array)
options = texture.TextureObjectOptions(address_mode=typing.AddressModeType.CLAMP, filter_mode=typing.FilterModeType.LINEAR)
buf = dev.allocate(1024 * 1024 * 4, stream=stream); stream.sync()
view = StridedMemoryView.from_buffer(buf, (1024, 1024), dtype=np.dtype(np.float32))
cases = {
 "tex": lambda: dev.create_texture_object(resource=resource, options=options).close(),
 "surf": lambda: dev.create_surface_object(resource=resource).close(),
 "tmap": lambda: view.as_tensor_map(box_dim=(32, 32)),
}
from cuda_core._cuda_ffi import lib, ffi
def raw_tex():
    tex = ffi.new("CUDA_TEXTURE_DESC *"); res = ffi.new("CUDA_RESOURCE_DESC *")
    res.resType = lib.CU_RESOURCE_TYPE_ARRAY; res.res.array.hArray = ffi.cast("CUarray", array.handle)
    out = ffi.new("CUtexObject *")
    assert lib.cuTexObjectCreate(out, res, tex, ffi.NULL) == 0
    assert lib.cuTexObjectDestroy(out[0]) == 0
cases["raw_tex"] = raw_tex
for name, f in cases.items():
    for _ in range(200): f()
    ts = []
    for r in range(5):
        t = time.perf_counter()
        for _ in range(2000): f()
        ts.append((time.perf_counter() - t) / 2000 * 1e6)
    print(name, "us/op", [round(x, 2) for x in ts])
for name in ("tex", "tmap"):
    pr = cProfile.Profile(); pr.enable()
    for _ in range(2000): cases[name]()
    pr.disable()
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(18); print(s.getvalue()[:4000])
