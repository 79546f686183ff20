"""Why: the row-streaming one-kernel MLP (src/cuda/mlp_stream.cu) has two
depth constants and a grid barrier whose cost is worth knowing; this writes
copies of the kernel with other constants (and one without the barrier,
for timing only: its results are wrong) under their own names, for
probe.cu to time side by side in one process.
Usage: python3 bench/cuda/row_stream/variants.py OUT_DIR (from the repository root)."""
import os
import re
import sys

SRC = open("src/cuda/mlp_stream.cu").read()
# name, words per batch (RS_LOADS), batches in flight (RS_STAGES), grid barrier
VARIANTS = [("c4s4", 4, 4, True), ("c4s3", 4, 3, True), ("c4s6", 4, 6, True), ("c8s2", 8, 2, True),
            ("c8s3", 8, 3, True), ("c4s4_nobarrier", 4, 4, False)]


def variant(name, loads, stages, barrier):
    s = re.sub(r"constexpr int RS_LOADS = \d+;", "constexpr int RS_LOADS = %d;" % loads, SRC)
    s = re.sub(r"constexpr int RS_STAGES = \d+;", "constexpr int RS_STAGES = %d;" % stages, s)
    if not barrier:
        s = s.replace("cg::this_grid().sync();", "__syncthreads();")
    s = s.replace("fmlp_mlp_glu_", name + "_fmlp_mlp_glu_").replace("fmlp_cu_mlp_stream", name + "_stream")
    s = re.sub(r'#include [<"].*[>"]\n', "", s)
    return "namespace %s {\n%s\n}\n" % (name, s)


out = sys.argv[1]
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "variants.inc"), "w") as f:
    for v in VARIANTS:
        f.write(variant(*v))
with open(os.path.join(out, "variants_list.inc"), "w") as f:
    for v in VARIANTS:
        f.write('{"%s", %s::%s_stream, %s},\n' % (v[0], v[0], v[0], "true" if v[3] else "false"))
