/* test_pipeline_dataset.c: datasets from a Kinetics-layout folder and from
 * CSV, TSV and JSONL manifests (names, labels, segments, errors naming the
 * file and line), the dataset API, and core's JSON reader and writer. */
#include "harness.h"

#include "reel/pipeline.h"
#include "core/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* -------------------------------------------------------------- dataset */

/* Class name `label` of ds (the call must succeed). */
static const char *class_name(const reel_dataset *ds, int64_t label)
{
    const char *name = NULL;
    CHECK_OK(reel_dataset_get_class_name(ds, label, &name, NULL));
    return name;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* "a/b" in one of 16 rotating buffers: keep longer-lived paths in locals. */
static const char *join(const char *a, const char *b)
{
    static char ring[16][1024];
    static int i;
    char tmp[1024];
    size_t la = strlen(a), lb = strlen(b);
    if (la + lb + 2 > sizeof tmp) FAIL("path too long: %s/%s", a, b);
    memcpy(tmp, a, la);
    tmp[la] = '/';
    memcpy(tmp + la + 1, b, lb + 1);
    char *p = ring[i++ % 16];
    memcpy(p, tmp, la + lb + 2);
    return p;
}

TEST(dataset_from_a_kinetics_directory)
{
    char root[1024];
    snprintf(root, sizeof root, "%s/kin", harness_tmpdir());
    mkdir(root, 0755);
    mkdir(join(root, "juggling"), 0755);
    mkdir(join(root, "abseiling"), 0755);
    mkdir(join(root, "abseiling/deeper"), 0755);
    mkdir(join(root, ".hidden"), 0755);
    write_text(join(root, "juggling/b.mp4"), "x");
    write_text(join(root, "juggling/a.MP4"), "x");
    write_text(join(root, "abseiling/c.mkv"), "x");
    write_text(join(root, "abseiling/deeper/d.webm"), "x");
    write_text(join(root, "abseiling/notes.txt"), "x");
    write_text(join(root, ".hidden/e.mp4"), "x");
    write_text(join(root, "root.mp4"), "x");
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create_from_dir(&ds, root, NULL, &err));
    CHECK_EQ_INT(reel_dataset_get_size(ds), 5);
    CHECK_EQ_INT(reel_dataset_get_num_classes(ds), 2);
    CHECK_EQ_STR(class_name(ds, 0), "abseiling");
    CHECK_EQ_STR(class_name(ds, 1), "juggling");
    const char *name = "unset";
    CHECK_STATUS(reel_dataset_get_class_name(ds, 2, &name, &err), REEL_E_OUT_OF_RANGE); /* no NULL for a bad label */
    CHECK_MSG(strstr(err.message, "label 2 of 2") != NULL, "%s", err.message);
    CHECK_STATUS(reel_dataset_get_class_name(ds, -1, &name, &err), REEL_E_OUT_OF_RANGE);
    CHECK_EQ_STR(name, "unset");
    CHECK_EQ_INT(reel_dataset_get_num_skipped(ds), 0);
    CHECK_STATUS(reel_dataset_get_skipped(ds, 0, &name, &err), REEL_E_OUT_OF_RANGE);
    CHECK_MSG(strstr(err.message, "skipped note 0 of 0") != NULL, "%s", err.message);
    reel_sample s;
    const char *want[5] = { "abseiling/c.mkv", "abseiling/deeper/d.webm", "juggling/a.MP4", "juggling/b.mp4",
                            "root.mp4" };
    const int64_t labels[5] = { 0, 0, 1, 1, -1 };
    for (size_t i = 0; i < 5; i++) {
        CHECK_OK(reel_dataset_get(ds, i, &s, &err));
        CHECK_EQ_STR(s.path, join(root, want[i]));
        CHECK_EQ_INT(s.label, labels[i]);
        CHECK_EQ_INT(s.start, 0);
        CHECK(s.end < 0);
    }
    CHECK_STATUS(reel_dataset_get(ds, 5, &s, &err), REEL_E_OUT_OF_RANGE);
    reel_dataset_destroy(&ds);
    CHECK(ds == NULL);
    /* extension filter */
    CHECK_OK(reel_dataset_create_from_dir(&ds, root, "mkv", &err));
    CHECK_EQ_INT(reel_dataset_get_size(ds), 1);
    reel_dataset_destroy(&ds);
    /* empty and missing */
    mkdir(join(root, "juggling/empty"), 0755);
    CHECK_STATUS(reel_dataset_create_from_dir(&ds, join(root, "juggling/empty"), NULL, &err), REEL_E_EMPTY);
    CHECK_STATUS(reel_dataset_create_from_dir(&ds, join(root, "nope"), NULL, &err), REEL_E_NOT_FOUND);
    CHECK(strstr(err.message, "nope") != NULL);
}

TEST(dataset_from_csv_with_header_quotes_and_names)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/csv", harness_tmpdir());
    mkdir(dir, 0755);
    char path[1100];
    snprintf(path, sizeof path, "%s/train.csv", dir);
    write_text(path, "\xEF\xBB\xBF"
                     "label,video,time_start,time_end,split\n"
                     "zebra,a.mp4,1.5,11.5,train\n"
                     "# a comment\n"
                     "\n"
                     "\"apple, red\",\"/abs/b \"\"q\"\".mp4\",,,train\r\n"
                     "zebra,sub/c.mp4,0,2\n");
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create_from_manifest(&ds, path, &err));
    CHECK_EQ_INT(reel_dataset_get_size(ds), 3);
    CHECK_EQ_INT(reel_dataset_get_num_classes(ds), 2);
    reel_sample s;
    CHECK_OK(reel_dataset_get(ds, 0, &s, &err));
    CHECK_EQ_STR(s.path, join(dir, "a.mp4"));
    CHECK_EQ_INT(s.label, 1); /* "apple, red" < "zebra" */
    CHECK_NEAR(s.start, 1.5, 1e-12);
    CHECK_NEAR(s.end, 11.5, 1e-12);
    CHECK_OK(reel_dataset_get(ds, 1, &s, &err));
    CHECK_EQ_STR(s.path, "/abs/b \"q\".mp4");
    CHECK_EQ_INT(s.label, 0);
    CHECK(s.end < 0);
    CHECK_EQ_STR(class_name(ds, 0), "apple, red");
    CHECK_OK(reel_dataset_get(ds, 2, &s, &err));
    CHECK_EQ_STR(s.path, join(dir, "sub/c.mp4"));
    reel_dataset_destroy(&ds);
}

TEST(dataset_from_tsv_without_header_and_integer_labels)
{
    const char *path = join(harness_tmpdir(), "list.tsv");
    write_text(path, "/v/a.mp4\t3\n/v/b.mp4\t0\t2.0\t4.0\n/v/c.mp4\n");
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create_from_manifest(&ds, path, &err));
    CHECK_EQ_INT(reel_dataset_get_size(ds), 3);
    CHECK_EQ_INT(reel_dataset_get_num_classes(ds), 0);
    reel_sample s;
    CHECK_OK(reel_dataset_get(ds, 0, &s, &err));
    CHECK_EQ_INT(s.label, 3);
    CHECK_OK(reel_dataset_get(ds, 1, &s, &err));
    CHECK_EQ_INT(s.label, 0);
    CHECK_NEAR(s.start, 2.0, 0);
    CHECK_NEAR(s.end, 4.0, 0);
    CHECK_OK(reel_dataset_get(ds, 2, &s, &err));
    CHECK_EQ_INT(s.label, -1);
    reel_dataset_destroy(&ds);
}

TEST(dataset_from_jsonl)
{
    const char *path = join(harness_tmpdir(), "m.jsonl");
    write_text(path,
               "{\"path\": \"/v/a.mp4\", \"label\": \"cat\", \"start\": 1, \"end\": 3.5, \"extra\": {\"x\": [1, 2]}}\n"
               "\n"
               "{\"video\": \"/v/caf\\u00e9.mp4\", \"class\": \"bird\"}\n"
               "{\"label\": \"cat\", \"file\": \"/v/\\\"q\\\".mp4\", \"start\": null}\n");
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create_from_manifest(&ds, path, &err));
    CHECK_EQ_INT(reel_dataset_get_size(ds), 3);
    reel_sample s;
    CHECK_OK(reel_dataset_get(ds, 0, &s, &err));
    CHECK_EQ_STR(s.path, "/v/a.mp4");
    CHECK_EQ_INT(s.label, 1); /* bird=0, cat=1 */
    CHECK_NEAR(s.start, 1, 0);
    CHECK_NEAR(s.end, 3.5, 0);
    CHECK_OK(reel_dataset_get(ds, 1, &s, &err));
    CHECK_EQ_STR(s.path, "/v/caf\xc3\xa9.mp4");
    CHECK_EQ_INT(s.label, 0);
    CHECK_OK(reel_dataset_get(ds, 2, &s, &err));
    CHECK_EQ_STR(s.path, "/v/\"q\".mp4");
    reel_dataset_destroy(&ds);
    /* integer labels in JSON numbers */
    write_text(path, "{\"path\": \"/a.mp4\", \"label\": 7}\n{\"path\": \"/b.mp4\", \"label\": 2}\n");
    CHECK_OK(reel_dataset_create_from_manifest(&ds, path, &err));
    CHECK_OK(reel_dataset_get(ds, 0, &s, &err));
    CHECK_EQ_INT(s.label, 7);
    reel_dataset_destroy(&ds);
}

TEST(dataset_manifest_errors_name_file_and_line)
{
    const char *path = join(harness_tmpdir(), "bad.jsonl");
    write_text(path, "{\"path\": \"/a.mp4\"}\n{\"path\": \"/b.mp4\", \n");
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_STATUS(reel_dataset_create_from_manifest(&ds, path, &err), REEL_E_INVALID_ARG);
    CHECK(ds == NULL);
    CHECK(strstr(err.message, "bad.jsonl: line 2") != NULL);
    path = join(harness_tmpdir(), "bad.csv");
    write_text(path, "path,label,start,end\n/a.mp4,1,zero,1\n");
    CHECK_STATUS(reel_dataset_create_from_manifest(&ds, path, &err), REEL_E_INVALID_ARG);
    CHECK(strstr(err.message, "line 2") != NULL);
    write_text(path, "path,label\n/a.mp4,1,\"unterminated\n");
    CHECK_STATUS(reel_dataset_create_from_manifest(&ds, path, &err), REEL_E_INVALID_ARG);
    write_text(path, "path,label\n");
    CHECK_STATUS(reel_dataset_create_from_manifest(&ds, path, &err), REEL_E_EMPTY);
    CHECK_STATUS(reel_dataset_create_from_manifest(&ds, join(harness_tmpdir(), "x.yaml"), &err), REEL_E_INVALID_ARG);
    CHECK_STATUS(reel_dataset_create_from_manifest(&ds, join(harness_tmpdir(), "missing.csv"), &err), REEL_E_NOT_FOUND);
    CHECK(strstr(err.message, "missing.csv") != NULL);
}

TEST(dataset_api_labels_and_freezing)
{
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create(&ds, &err));
    CHECK_OK(reel_dataset_add_named(ds, "/v/1.mp4", "walk", 0, -1, &err));
    CHECK_OK(reel_dataset_add_named(ds, "/v/2.mp4", "run", 0, -1, &err));
    CHECK_OK(reel_dataset_add_named(ds, "/v/3.mp4", "walk", 1, 2, &err));
    CHECK_OK(reel_dataset_add_named(ds, "/v/4.mp4", NULL, 0, -1, &err));
    /* kinds do not mix */
    CHECK_STATUS(reel_dataset_add(ds, "/v/5.mp4", 3, 0, -1, &err), REEL_E_INVALID_ARG);
    CHECK_STATUS(reel_dataset_add(ds, "", -1, 0, -1, &err), REEL_E_INVALID_ARG);
    CHECK_STATUS(reel_dataset_add(ds, "/v/6.mp4", -1, 3, 2, &err), REEL_E_INVALID_ARG);
    CHECK_STATUS(reel_dataset_add_named(ds, "/v/6.mp4", "aaa", 3, 2, &err), REEL_E_INVALID_ARG);
    CHECK_EQ_INT(reel_dataset_get_num_classes(ds), 2); /* the refused entry's class was not kept */
    CHECK_EQ_INT(reel_dataset_get_size(ds), 4);
    reel_sample s;
    CHECK_OK(reel_dataset_get(ds, 0, &s, &err));
    CHECK_EQ_INT(s.label, 1);
    CHECK_OK(reel_dataset_get(ds, 1, &s, &err));
    CHECK_EQ_INT(s.label, 0);
    /* a class added later re-sorts the labels */
    CHECK_OK(reel_dataset_add_named(ds, "/v/7.mp4", "clap", 0, -1, &err));
    CHECK_OK(reel_dataset_get(ds, 0, &s, &err));
    CHECK_EQ_INT(s.label, 2);
    CHECK_OK(reel_dataset_get(ds, 3, &s, &err));
    CHECK_EQ_INT(s.label, -1);
    reel_dataset_destroy(&ds);

    CHECK_OK(reel_dataset_create(&ds, &err));
    CHECK_OK(reel_dataset_add(ds, "/v/1.mp4", 5, 0, -1, &err));
    CHECK_STATUS(reel_dataset_add_named(ds, "/v/2.mp4", "x", 0, -1, &err), REEL_E_INVALID_ARG);
    reel_dataset_destroy(&ds);
}

/* ----------------------------------------------------------------- JSON */

typedef struct kv_seen {
    int n;
    char keys[8][32];
    int types[8];
    double nums[8];
    char strs[8][64];
} kv_seen;

static int collect(void *op, const char *key, const reel_json_value *v)
{
    kv_seen *s = op;
    if (s->n >= 8) return 1;
    snprintf(s->keys[s->n], 32, "%s", key);
    s->types[s->n] = v->type;
    s->nums[s->n] = v->number;
    snprintf(s->strs[s->n], 64, "%s", v->type == REEL_JSON_STRING ? v->text : "");
    s->n++;
    return 0;
}

TEST(json_reader_and_writer_round_trip)
{
    reel_buf b;
    reel__buf_init(&b);
    reel__buf_puts(&b, "{\"s\":");
    reel__buf_json_string(&b, "a\"b\\c\n\t\x01/\xc3\xa9");
    reel__buf_puts(&b, ",\"n\":");
    reel__buf_json_double(&b, 2.5);
    reel__buf_puts(&b, ",\"i\":");
    reel__buf_json_double(&b, 3);
    reel__buf_puts(&b, ",\"x\":");
    reel__buf_json_double(&b, NAN);
    reel__buf_puts(&b, ",\"o\":{\"a\":[1,{\"b\":\"}\"}]},\"t\":true}");
    CHECK(!b.oom);
    kv_seen seen;
    memset(&seen, 0, sizeof seen);
    size_t where = 0;
    CHECK_EQ_INT(reel__json_object_each(b.data, b.len, collect, &seen, &where), 0);
    CHECK_EQ_INT(seen.n, 6);
    CHECK_EQ_STR(seen.keys[0], "s");
    CHECK_EQ_STR(seen.strs[0], "a\"b\\c\n\t\x01/\xc3\xa9");
    CHECK_EQ_INT(seen.types[1], REEL_JSON_NUMBER);
    CHECK_NEAR(seen.nums[1], 2.5, 0);
    CHECK_NEAR(seen.nums[2], 3, 0);
    CHECK_EQ_INT(seen.types[3], REEL_JSON_NULL);
    CHECK_EQ_INT(seen.types[4], REEL_JSON_OTHER);
    CHECK_EQ_INT(seen.types[5], REEL_JSON_BOOL);
    char *text = reel__buf_take(&b);
    CHECK(text != NULL);
    free(text);
    const char *bad[] = { "", "{", "{\"a\"}", "{\"a\":1,}", "{\"a\":tru}", "{\"a\":1} x", "[1]", "{\"a\":\"\\q\"}" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&seen, 0, sizeof seen);
        CHECK_MSG(reel__json_object_each(bad[i], strlen(bad[i]), collect, &seen, &where) != 0, "accepted %s", bad[i]);
    }
}

/* A byte that is not part of well-formed UTF-8 (a Linux file name is bytes)
 * is written as \u00XX; well-formed UTF-8 is kept; the text is always UTF-8. */
TEST(json_writer_escapes_bytes_that_are_not_utf8)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        { "bad\xff.mp4", "\"bad\\u00ff.mp4\"" },
        { "\xff\xfe", "\"\\u00ff\\u00fe\"" },
        { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e \x7f", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e \x7f\"" },
        { "\xc0\xaf", "\"\\u00c0\\u00af\"" },                       /* overlong '/' */
        { "\xe0\x80\xaf", "\"\\u00e0\\u0080\\u00af\"" },            /* overlong, 3 bytes */
        { "\xed\xa0\x80", "\"\\u00ed\\u00a0\\u0080\"" },            /* a surrogate (U+D800) */
        { "\xf4\x90\x80\x80", "\"\\u00f4\\u0090\\u0080\\u0080\"" }, /* past U+10FFFF */
        { "\xf5\x80\x80\x80", "\"\\u00f5\\u0080\\u0080\\u0080\"" },
        { "a\xe2\x82", "\"a\\u00e2\\u0082\"" },    /* cut short at the end */
        { "\xe2\x82z", "\"\\u00e2\\u0082z\"" },    /* cut short before ASCII */
        { "\x80\xc3\xa9", "\"\\u0080\xc3\xa9\"" }, /* a lone continuation, then é */
        { "\x01\x1f\"\\", "\"\\u0001\\u001f\\\"\\\\\"" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        reel_buf b;
        reel__buf_init(&b);
        reel__buf_json_string(&b, cases[i].in);
        CHECK(!b.oom);
        CHECK_EQ_STR(b.data, cases[i].want);
        /* reel's own reader takes it back: \u00XX is the character U+00XX */
        reel_buf o;
        reel__buf_init(&o);
        reel__buf_puts(&o, "{\"k\":");
        reel__buf_puts(&o, b.data);
        reel__buf_puts(&o, "}");
        kv_seen seen;
        memset(&seen, 0, sizeof seen);
        size_t where = 0;
        CHECK_EQ_INT(reel__json_object_each(o.data, o.len, collect, &seen, &where), 0);
        CHECK_EQ_INT(seen.n, 1);
        reel__buf_free(&o);
        reel__buf_free(&b);
    }
}
