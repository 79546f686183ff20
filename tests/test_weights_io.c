/* Why: MLP weights move between fmlp and PyTorch as safetensors under
 * state_dict names. This checks save/load round trips bit-exactly for gated
 * MLPs and stacks (with and without bias, with a prefix), that the shape
 * inference reads PyTorch-written files, and that every mismatch between a
 * file and an MLP is refused with a message naming the tensor and both
 * shapes, leaving the MLP untouched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "test_util.h"

static fmlp_ctx *g_ctx;
static char g_path[1024];

static const char *tmp_path(const char *name)
{
    snprintf(g_path, sizeof g_path, "%s/wio_%s.safetensors", tu_tmpdir(), name);
    return g_path;
}

static fmlp_mlp_desc gated(int64_t dim, int64_t hidden, bool bias, fmlp_dtype dt)
{
    return (fmlp_mlp_desc){FMLP_BLOCK_GATED, dim, hidden, 0, 0, FMLP_ACT_GELU_TANH, bias, dt};
}

static fmlp_mlp_desc stack(int64_t dim, int64_t hidden, int64_t out, int layers, bool bias, fmlp_dtype dt)
{
    return (fmlp_mlp_desc){FMLP_BLOCK_STACK, dim, hidden, out, layers, FMLP_ACT_RELU, bias, dt};
}

static fmlp_mlp *make(const fmlp_mlp_desc *d, uint64_t seed)
{
    fmlp_mlp *m = NULL;
    if (fmlp_mlp_create(g_ctx, d, seed, &m) != FMLP_OK) tu_check(false, "create MLP: %s", fmlp_last_error());
    return m;
}

/* Whether every tensor of a and b holds the same values. */
static bool same_weights(const fmlp_mlp *a, const fmlp_mlp *b)
{
    if (fmlp_mlp_tensor_count(a) != fmlp_mlp_tensor_count(b)) return false;
    bool same = true;
    for (int i = 0; i < fmlp_mlp_tensor_count(a) && same; i++) {
        const char *name;
        int64_t r, c;
        fmlp_mlp_tensor_info(a, i, &name, &r, &c);
        float *x = malloc((size_t)(r * c) * 4), *y = malloc((size_t)(r * c) * 4);
        same = fmlp_mlp_get_weight(a, name, x, r, c) == FMLP_OK && fmlp_mlp_get_weight(b, name, y, r, c) == FMLP_OK &&
               memcmp(x, y, (size_t)(r * c) * 4) == 0;
        free(x);
        free(y);
    }
    return same;
}

static void round_trip(const char *what, const fmlp_mlp_desc *d, const char *prefix)
{
    fmlp_mlp *a = make(d, 1), *b = make(d, 2);
    if (!a || !b) return;
    const char *path = tmp_path("rt");
    tu_check(!same_weights(a, b), "%s: two seeds give different weights", what);
    tu_check(fmlp_mlp_save_safetensors(a, path, prefix) == FMLP_OK, "%s: save: %s", what, fmlp_last_error());
    tu_check(fmlp_mlp_load_safetensors(b, path, prefix) == FMLP_OK, "%s: load: %s", what, fmlp_last_error());
    tu_check(same_weights(a, b), "%s: loaded weights equal the saved ones", what);

    fmlp_st_file *f = NULL;
    fmlp_dtype dt = FMLP_F32;
    char name[256];
    snprintf(name, sizeof name, "%s%s", prefix ? prefix : "", d->block == FMLP_BLOCK_GATED ? "down_proj.weight" : "0.weight");
    tu_check(fmlp_st_open(path, &f) == FMLP_OK && fmlp_st_count(f) == fmlp_mlp_tensor_count(a) &&
                 fmlp_st_find(f, name, &dt, NULL, NULL, NULL) == FMLP_OK && dt == d->dtype,
             "%s: file holds %s in %s under state_dict names", what, name, fmlp_dtype_name(d->dtype));
    fmlp_st_close(f);

    fmlp_mlp_desc got = {.act = FMLP_ACT_SILU, .dtype = FMLP_BF16};
    fmlp_status st = fmlp_mlp_desc_from_safetensors(path, prefix, &got);
    const fmlp_mlp_desc *want = fmlp_mlp_get_desc(a);
    tu_check(st == FMLP_OK && got.block == want->block && got.dim == want->dim && got.out_dim == want->out_dim &&
                 got.bias == want->bias && (want->block == FMLP_BLOCK_GATED || got.layers == want->layers) &&
                 (want->block == FMLP_BLOCK_STACK && want->layers == 1 ? true : got.hidden == want->hidden) &&
                 got.act == FMLP_ACT_SILU && got.dtype == FMLP_BF16,
             "%s: desc_from_safetensors infers the shape and keeps act and dtype: %s", what,
             st == FMLP_OK ? "" : fmlp_last_error());
    fmlp_mlp_destroy(a);
    fmlp_mlp_destroy(b);
}

static void test_round_trips(void)
{
    fmlp_dtype dts[2] = {FMLP_BF16, FMLP_F32};
    for (int i = 0; i < 2; i++) {
        char what[64];
        fmlp_mlp_desc d = gated(48, 80, false, dts[i]);
        snprintf(what, sizeof what, "gated %s", fmlp_dtype_name(dts[i]));
        round_trip(what, &d, NULL);
        d = gated(32, 72, true, dts[i]);
        snprintf(what, sizeof what, "gated+bias %s, prefix", fmlp_dtype_name(dts[i]));
        round_trip(what, &d, "model.layers.0.mlp.");
        d = stack(40, 56, 24, 3, true, dts[i]);
        snprintf(what, sizeof what, "3-layer stack+bias %s", fmlp_dtype_name(dts[i]));
        round_trip(what, &d, "");
        d = stack(40, 0, 24, 1, false, dts[i]);
        snprintf(what, sizeof what, "1-layer stack %s", fmlp_dtype_name(dts[i]));
        round_trip(what, &d, "head.");
    }
    /* A bf16 MLP loads f32 files (converted) and vice versa. */
    fmlp_mlp_desc d32 = gated(16, 24, true, FMLP_F32), d16 = gated(16, 24, true, FMLP_BF16);
    fmlp_mlp *a = make(&d16, 3), *b = make(&d32, 4), *c = make(&d16, 5);
    const char *path = tmp_path("conv");
    tu_check(a && b && c && fmlp_mlp_save_safetensors(a, path, NULL) == FMLP_OK &&
                 fmlp_mlp_load_safetensors(b, path, NULL) == FMLP_OK && same_weights(a, b),
             "bf16 file loads into an f32 MLP exactly");
    tu_check(fmlp_mlp_save_safetensors(b, path, NULL) == FMLP_OK && fmlp_mlp_load_safetensors(c, path, NULL) == FMLP_OK &&
                 same_weights(a, c),
             "f32 file of bf16 values loads into a bf16 MLP exactly");
    fmlp_mlp_destroy(a);
    fmlp_mlp_destroy(b);
    fmlp_mlp_destroy(c);
}

/* The load must fail with `want`, name the needles, and leave `m` as it was. */
static void expect_load_fail(fmlp_mlp *m, const char *path, const char *prefix, fmlp_status want, const char *n1,
                             const char *n2, const char *what)
{
    fmlp_mlp_desc d = *fmlp_mlp_get_desc(m);
    fmlp_mlp *before = make(&d, 99);
    for (int i = 0; before && i < fmlp_mlp_tensor_count(m); i++) {
        const char *name;
        int64_t r, c;
        fmlp_mlp_tensor_info(m, i, &name, &r, &c);
        float *x = malloc((size_t)(r * c) * 4);
        fmlp_mlp_get_weight(m, name, x, r, c);
        fmlp_mlp_set_weight(before, name, FMLP_F32, x, r, c);
        free(x);
    }
    if (tu_expect_fail(fmlp_mlp_load_safetensors(m, path, prefix), want, what)) {
        const char *msg = fmlp_last_error();
        tu_check(strstr(msg, n1) && (!n2 || strstr(msg, n2)), "  message names '%s'%s%s", n1, n2 ? " and " : "",
                 n2 ? n2 : "");
    }
    tu_check(before && same_weights(m, before), "  the MLP is unchanged");
    fmlp_mlp_destroy(before);
}

static void test_mismatches(void)
{
    fmlp_mlp_desc d = gated(64, 160, false, FMLP_F32);
    fmlp_mlp *src = make(&d, 7);
    const char *path = tmp_path("src");
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", path);
    fmlp_mlp_save_safetensors(src, saved, "model.layers.0.mlp.");

    fmlp_mlp_desc wrong = gated(64, 128, false, FMLP_F32);
    fmlp_mlp *m = make(&wrong, 8);
    expect_load_fail(m, saved, "model.layers.0.mlp.", FMLP_ERR_SHAPE, "gate_proj.weight has shape [160, 64]",
                     "needs [128, 64]", "hidden 160 file into a hidden 128 MLP");
    fmlp_mlp_destroy(m);

    fmlp_mlp_desc with_bias = gated(64, 160, true, FMLP_F32);
    m = make(&with_bias, 8);
    expect_load_fail(m, saved, "model.layers.0.mlp.", FMLP_ERR_FORMAT, "gate_proj.bias", "bias = false",
                     "MLP with bias, file without");
    fmlp_mlp_destroy(m);

    m = make(&d, 8);
    expect_load_fail(m, saved, "model.layers.1.mlp.", FMLP_ERR_FORMAT, "model.layers.1.mlp.", "prefix",
                     "wrong prefix");
    expect_load_fail(m, saved, NULL, FMLP_ERR_FORMAT, "'gate_proj.weight'", NULL, "prefix left out");
    expect_load_fail(m, "/nonexistent.safetensors", NULL, FMLP_ERR_IO, "/nonexistent.safetensors", NULL,
                     "missing file");

    /* A file whose down_proj is missing, another with a wrong down_proj. */
    float *w = calloc(160 * 64, 4);
    tu_fill(FMLP_F32, w, 160 * 64, -1, 1, NULL);
    fmlp_st_tensor t[3] = {{"gate_proj.weight", FMLP_F32, 2, {160, 64, 0}, w},
                           {"up_proj.weight", FMLP_F32, 2, {160, 64, 0}, w},
                           {"down_proj.weight", FMLP_F32, 2, {64, 150, 0}, w}};
    const char *p2 = tmp_path("partial");
    fmlp_st_write(p2, t, 2);
    expect_load_fail(m, p2, "", FMLP_ERR_FORMAT, "'down_proj.weight'", "needs", "missing down_proj.weight");
    fmlp_st_write(p2, t, 3);
    expect_load_fail(m, p2, "", FMLP_ERR_SHAPE, "down_proj.weight has shape [64, 150]", "needs [64, 160]",
                     "down_proj.weight of the wrong shape (checked before anything is set)");
    fmlp_mlp_desc got = gated(1, 1, false, FMLP_F32);
    tu_expect_fail(fmlp_mlp_desc_from_safetensors(p2, NULL, &got), FMLP_ERR_FORMAT, "desc from inconsistent gated shapes");
    tu_check(strstr(fmlp_last_error(), "down_proj.weight") != NULL, "  message names down_proj.weight");
    t[2].rank = 3;
    t[2].shape[0] = 64;
    t[2].shape[1] = 16;
    t[2].shape[2] = 10;
    fmlp_st_write(p2, t, 3);
    expect_load_fail(m, p2, "", FMLP_ERR_SHAPE, "[64, 16, 10]", "[64, 160]", "rank-3 tensor with the right element count");

    /* An extra bias in the file, and a file with more layers than the MLP. */
    fmlp_st_tensor tb[4] = {t[0], t[1], {"down_proj.weight", FMLP_F32, 2, {64, 160, 0}, w},
                            {"up_proj.bias", FMLP_F32, 1, {160, 0, 0}, w}};
    fmlp_st_write(p2, tb, 4);
    expect_load_fail(m, p2, "", FMLP_ERR_FORMAT, "up_proj.bias", "bias = true", "file with a bias the MLP lacks");
    fmlp_mlp_destroy(m);

    fmlp_mlp_desc s2 = stack(64, 64, 64, 2, false, FMLP_F32);
    m = make(&s2, 9);
    fmlp_st_tensor ts[3] = {{"0.weight", FMLP_F32, 2, {64, 64, 0}, w},
                            {"2.weight", FMLP_F32, 2, {64, 64, 0}, w},
                            {"4.weight", FMLP_F32, 2, {64, 64, 0}, w}};
    fmlp_st_write(p2, ts, 3);
    expect_load_fail(m, p2, "", FMLP_ERR_FORMAT, "4.weight", "does not have", "file with more layers than the MLP");
    fmlp_mlp_desc inferred = s2;
    tu_check(fmlp_mlp_desc_from_safetensors(p2, "", &inferred) == FMLP_OK && inferred.layers == 3,
             "desc_from_safetensors counts 3 layers");

    fmlp_st_tensor tf[1] = {{"0.weight", FMLP_F32, 2, {64, 64, 0}, w}};
    fmlp_st_write(p2, tf, 1);
    expect_load_fail(m, p2, "", FMLP_ERR_FORMAT, "'2.weight'", NULL, "file with fewer layers than the MLP");

    /* An F64 weight is refused by name. */
    FILE *fp = fopen(p2, "wb");
    const char *hdr = "{\"0.weight\":{\"dtype\":\"F64\",\"shape\":[64,64],\"data_offsets\":[0,32768]},"
                      "\"2.weight\":{\"dtype\":\"F32\",\"shape\":[64,64],\"data_offsets\":[32768,49152]}}";
    uint64_t hl = strlen(hdr);
    for (int i = 0; i < 8; i++) fputc((int)(hl >> (8 * i)) & 0xff, fp);
    fputs(hdr, fp);
    for (int i = 0; i < 49152; i++) fputc(0x3c, fp);
    fclose(fp);
    expect_load_fail(m, p2, "", FMLP_ERR_UNSUPPORTED, "0.weight", "F64", "F64 weight");
    fmlp_mlp_destroy(m);

    got = gated(1, 1, false, FMLP_F32);
    tu_expect_fail(fmlp_mlp_desc_from_safetensors(saved, "nope.", &got), FMLP_ERR_FORMAT, "desc with a wrong prefix");
    tu_check(strstr(fmlp_last_error(), "nope.gate_proj.weight") && got.dim == 1, "  message names the tried names; desc untouched");
    tu_expect_fail(fmlp_mlp_load_safetensors(NULL, saved, NULL), FMLP_ERR_INVALID_ARGUMENT, "NULL MLP");
    tu_expect_fail(fmlp_mlp_save_safetensors(src, "/nonexistent/dir/x.safetensors", NULL), FMLP_ERR_IO,
                   "save into a missing directory");
    free(w);
    fmlp_mlp_destroy(src);
}

/* The PyTorch-written fixtures: shapes inferred, weights loaded. */
static void test_torch_fixtures(void)
{
    const char *dir = getenv("FMLP_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/prefix_geglu_f32.safetensors", dir ? dir : "tests/data");
    if (access(path, R_OK) != 0) {
        tu_skip("no PyTorch fixtures at %s", path);
        return;
    }
    fmlp_mlp_desc d = {.act = FMLP_ACT_GELU_TANH, .dtype = FMLP_F32};
    fmlp_status st = fmlp_mlp_desc_from_safetensors(path, "model.layers.0.mlp.", &d);
    tu_check(st == FMLP_OK && d.block == FMLP_BLOCK_GATED && d.dim == 64 && d.hidden == 160 && !d.bias,
             "prefixed PyTorch GeGLU: gated, dim 64, hidden 160, no bias: %s", fmlp_last_error());
    fmlp_mlp *m = st == FMLP_OK ? make(&d, 1) : NULL;
    tu_check(m && fmlp_mlp_load_safetensors(m, path, "model.layers.0.mlp.") == FMLP_OK, "and loads: %s",
             fmlp_last_error());
    fmlp_mlp_destroy(m);

    snprintf(path, sizeof path, "%s/seq_gelu_bf16.safetensors", dir ? dir : "tests/data");
    d = (fmlp_mlp_desc){.act = FMLP_ACT_GELU, .dtype = FMLP_BF16};
    st = fmlp_mlp_desc_from_safetensors(path, NULL, &d);
    tu_check(st == FMLP_OK && d.block == FMLP_BLOCK_STACK && d.layers == 3 && d.dim == 64 && d.hidden == 160 &&
                 d.out_dim == 64 && d.bias,
             "PyTorch Sequential: 3 layers 64->160->160->64 with bias: %s", fmlp_last_error());
    m = st == FMLP_OK ? make(&d, 1) : NULL;
    tu_check(m && fmlp_mlp_load_safetensors(m, path, NULL) == FMLP_OK, "and loads: %s", fmlp_last_error());
    fmlp_mlp_destroy(m);
}

/* Widths read from a file that are out of range name the file, not a
 * description the user never wrote. */
static void test_widths_from_file(void)
{
    const char *path = tmp_path("widths");
    float w[64];
    tu_fill(FMLP_F32, w, 64, -1, 1, NULL);
    struct {
        const char *what, *needle;
        fmlp_st_tensor t[3];
    } cases[] = {
        {"gated, 0 hidden", "hidden = 0",
         {{"gate_proj.weight", FMLP_F32, 2, {0, 16, 0}, w},
          {"up_proj.weight", FMLP_F32, 2, {0, 16, 0}, w},
          {"down_proj.weight", FMLP_F32, 2, {16, 0, 0}, w}}},
        {"gated, 0 inputs", "dim = 0",
         {{"gate_proj.weight", FMLP_F32, 2, {4, 0, 0}, w},
          {"up_proj.weight", FMLP_F32, 2, {4, 0, 0}, w},
          {"down_proj.weight", FMLP_F32, 2, {4, 4, 0}, w}}},
        {"gated, 0 outputs", "0 outputs",
         {{"gate_proj.weight", FMLP_F32, 2, {4, 4, 0}, w},
          {"up_proj.weight", FMLP_F32, 2, {4, 4, 0}, w},
          {"down_proj.weight", FMLP_F32, 2, {0, 4, 0}, w}}},
        {"a stack of 2, 0 hidden", "hidden = 0",
         {{"0.weight", FMLP_F32, 2, {0, 4, 0}, w}, {"2.weight", FMLP_F32, 2, {4, 0, 0}, w}, {0}}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int n = cases[i].t[2].name ? 3 : 2;
        if (!tu_check(fmlp_st_write(path, cases[i].t, n) == FMLP_OK, "write %s", cases[i].what)) continue;
        fmlp_mlp_desc got = gated(1, 1, false, FMLP_F32);
        fmlp_clear_error();
        tu_expect_fail(fmlp_mlp_desc_from_safetensors(path, NULL, &got), FMLP_ERR_FORMAT, cases[i].what);
        tu_check(strstr(fmlp_last_error(), path) && strstr(fmlp_last_error(), cases[i].needle) && got.dim == 1,
                 "  names the file and says \"%s\"; desc untouched: %s", cases[i].needle, fmlp_last_error());
    }
}

int main(void)
{
    tu_seed();
    fmlp_ctx_options opt = fmlp_ctx_options_default();
    opt.threads = 2;
    if (fmlp_ctx_create(&opt, &g_ctx) != FMLP_OK) {
        tu_check(false, "create context: %s", fmlp_last_error());
        return tu_finish();
    }
    test_round_trips();
    test_mismatches();
    test_torch_fixtures();
    test_widths_from_file();
    fmlp_ctx_destroy(g_ctx);
    return tu_finish();
}
