"""Why: the one-kernel MLP's forms (src/cuda/mlp_stream.cu at one row,
src/cuda/mlp_stream_mma.cu at 2..16, src/cuda/mlp_one.cu's resident down
groups at the tutorial's shape) have depth constants and a grid barrier
whose cost is worth knowing; this writes copies of each kernel with other
constants (and without the barrier, for timing only: their results are
wrong) under their own names, for probe.cu to time side by side in one
process.
Usage: python3 bench/cuda/row_stream/variants.py OUT_DIR (from the repository root)."""
import os
import re
import sys

# file, launcher, rows (first, last), constants to set
FORMS = {
    "row": ("src/cuda/mlp_stream.cu", "fmlp_cu_mlp_stream", (1, 1)),
    "mma": ("src/cuda/mlp_stream_mma.cu", "fmlp_cu_mlp_stream_rows", (2, 16)),
    "one": ("src/cuda/mlp_one.cu", "fmlp_cu_mlp_one", (1, 16)),
}
# x (then h) loaded for 2 rows only, the rest zeros: what loading the
# other 14 costs at 16 rows (timing only)
X2 = [("xa = !in || g >= m ?", "xa = !in || g >= 2 ?"), ("xb = !in || g + 8 >= m ?", "xb = !in || true ?")]
# every row's x (then h) words read from rows 0 and 1: the bytes of two
# rows, the products of sixteen (timing only)
X2DATA = [("? __ldcg(x + g * ldxw + kw) : __ldg(x + g * ldxw + kw)", "? __ldcg(x + (g & 1) * ldxw + kw) : __ldg(x + (g & 1) * ldxw + kw)"),
          ("? __ldcg(x + (g + 8) * ldxw + kw) : __ldg(x + (g + 8) * ldxw + kw)", "? __ldcg(x + (g & 1) * ldxw + kw) : __ldg(x + (g & 1) * ldxw + kw)")]
# name, form, {constant: value}, grid barrier[, source replacements (timing only)]
VARIANTS = [
    ("c4s4", "row", {"RS_LOADS": 4, "RS_STAGES": 4}, True),
    ("c4s4_nobarrier", "row", {"RS_LOADS": 4, "RS_STAGES": 4}, False),
    ("g2s4", "mma", {"MS_CHUNKS": 4, "MS_GROUP": 2, "MS_STAGES": 4}, True),
    ("g1s4", "mma", {"MS_CHUNKS": 4, "MS_GROUP": 1, "MS_STAGES": 4}, True),
    ("g4s4", "mma", {"MS_CHUNKS": 4, "MS_GROUP": 4, "MS_STAGES": 4}, True),
    ("g4s3", "mma", {"MS_CHUNKS": 4, "MS_GROUP": 4, "MS_STAGES": 3}, True),
    ("g2s5", "mma", {"MS_CHUNKS": 4, "MS_GROUP": 2, "MS_STAGES": 5}, True),
    ("k8g1s3", "mma", {"MS_CHUNKS": 8, "MS_GROUP": 1, "MS_STAGES": 3}, True),
    ("g2s4_nobarrier", "mma", {"MS_CHUNKS": 4, "MS_GROUP": 2, "MS_STAGES": 4}, False),
    ("whole", "mma", {"MS_ROTATE": 0}, True),
    ("rot", "mma", {"MS_ROTATE": 1}, True),
    ("whole_x2", "mma", {"MS_ROTATE": 0}, True, X2),
    ("rot_x2", "mma", {"MS_ROTATE": 1}, True, X2),
    ("rot_x2data", "mma", {"MS_ROTATE": 1}, True, X2DATA),
    ("one", "one", {}, True),
    ("one_nobarrier", "one", {}, False),
]


def variant(name, form, constants, barrier, replacements=()):
    path, launcher, _ = FORMS[form]
    s = open(path).read()
    for old, new in replacements:
        assert s.count(old) == 1, (path, old)
        s = s.replace(old, new)
    for k, v in constants.items():
        s, n = re.subn(r"constexpr int %s = \d+;" % k, "constexpr int %s = %d;" % (k, v), s)
        assert n == 1, (path, k)
    # the one-row form hands 2..16 rows to the other; a variant keeps its own
    s = re.sub(r"\n *if \(a->m > 1\) return fmlp_cu_mlp_stream_rows\w*\(.*\);", "", s)
    s = re.sub(r"a->m > 1 \? fmlp_cu_mlp_stream_rows_name\(a\) : ", "", s)
    s = s.replace("a->m > 1 ? fmlp_cu_mlp_stream_rows_scratch(a) : 0", "(void)a, (size_t)0")
    # mlp_one.cu's own forms only: the row streams are variants of their own
    s, n = re.subn(r"(static bool row_stream\(const fmlp_cu_mlp_args \*a\)\n\{\n).*?\n\}", r"\1    (void)a;\n    return false;\n}", s,
                   flags=re.S)
    assert n == (1 if form == "one" else 0), (path, n)
    if not barrier:
        s = s.replace("cg::this_grid().sync();", "__syncthreads();")
    s = s.replace("fmlp_mlp_glu_", name + "_fmlp_mlp_glu_").replace(launcher, name + "_stream")
    s = re.sub(r'#include [<"].*[>"]\n', "", s)
    return "namespace %s {\n%s\n}\n" % (name, s)


out = sys.argv[1]
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "variants.inc"), "w") as f:
    for v in VARIANTS:
        f.write(variant(*v))
with open(os.path.join(out, "variants_list.inc"), "w") as f:
    for name, form, _, barrier, *replacements in VARIANTS:
        lo, hi = FORMS[form][2]
        exact = barrier and not replacements
        f.write('{"%s", %s::%s_stream, %d, %d, %s},\n' % (name, name, name, lo, hi, "true" if exact else "false"))
