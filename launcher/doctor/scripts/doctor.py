# The Python part of `tfhive doctor` (doctor.sh feeds it to the host's
# python3 on stdin): the interpreter, each module's version, and the
# CUDA, cuDNN and NCCL versions TensorFlow and PyTorch say they were
# built with. The modules to import are its arguments. It prints one
# line, "@@tfhive-python " and a JSON object; tfhive checks every value
# it reads from it.
#
# A module that is not installed is null; one that fails to import is
# "error: " and the exception's type. Nothing a module prints while it
# is imported reaches stdout, which is the report's.
import importlib
import json
import platform
import sys

report_to = sys.stdout
sys.stdout = sys.stderr


def installed(name):
    try:
        import importlib.util
    except ImportError:  # Python 2: the import itself will tell
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a missing parent package
        return False


def version_of(mod, name):
    v = getattr(mod, "__version__", None)
    if v is None:
        try:
            from importlib import metadata

            v = metadata.version(name.split(".")[0])
        except Exception:
            v = None
    return "?" if v is None else str(v)


def text(v):
    if v is None or v == "":
        return None
    if isinstance(v, (tuple, list)):
        return ".".join(str(x) for x in v)
    return str(v)


def cudnn_text(v):
    # torch gives cuDNN as one number: 8902 is 8.9.2, 90100 is 9.1.0.
    if not isinstance(v, int):
        return text(v)
    if v >= 90000:
        return "%d.%d.%d" % (v // 10000, v % 10000 // 100, v % 100)
    return "%d.%d.%d" % (v // 1000, v % 1000 // 100, v % 100)


def attempt(f):
    try:
        return f()
    except Exception:
        return None


report = {
    "executable": sys.executable,
    "version": platform.python_version(),
    "modules": {},
    "cuda": {},
    "cudnn": {},
    "nccl": {},
}
loaded = {}
for name in sys.argv[1:]:
    if name in report["modules"]:
        continue
    if not installed(name):
        report["modules"][name] = None
        continue
    try:
        loaded[name] = importlib.import_module(name)
    except BaseException as e:  # SystemExit and worse from a broken package
        report["modules"][name] = "error: " + type(e).__name__
        continue
    report["modules"][name] = version_of(loaded[name], name)

tf = loaded.get("tensorflow")
if tf is not None:
    info = attempt(lambda: dict(tf.sysconfig.get_build_info())) or {}
    report["cuda"]["tensorflow"] = text(info.get("cuda_version"))
    report["cudnn"]["tensorflow"] = text(info.get("cudnn_version"))
torch = loaded.get("torch")
if torch is not None:
    report["cuda"]["torch"] = text(attempt(lambda: torch.version.cuda))
    cudnn = attempt(lambda: importlib.import_module("torch.backends.cudnn"))
    report["cudnn"]["torch"] = cudnn_text(attempt(lambda: cudnn.version()))
    nccl = attempt(lambda: importlib.import_module("torch.cuda.nccl"))
    report["nccl"]["torch"] = text(attempt(lambda: nccl.version()))

report_to.write("@@tfhive-python " + json.dumps(report) + "\n")
report_to.flush()
