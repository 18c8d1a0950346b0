/* test_remote_listing.c: remote folders without a server: the S3
 * ListObjectsV2 parser (keys under the prefix, the five XML entities and
 * character references, continuation tokens, bad answers) and a dataset from
 * listed names (the local scan's rules: extensions, hidden names, classes). */
#include "harness.h"

#include "io/s3.h"
#include "pipeline/dataset_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct listing {
    char **names;
    size_t n, cap;
    char token[256];
} listing;

/* Class name `label` of ds (the call must succeed). */
static const char *class_name(const reel_dataset *ds, int64_t label)
{
    const char *name = NULL;
    CHECK_OK(reel_dataset_get_class_name(ds, label, &name, NULL));
    return name;
}

static int parse(listing *l, const char *body, const char *prefix, reel_error *err)
{
    return reel__s3_parse_listing(body, strlen(body), prefix, &l->names, &l->n, &l->cap, l->token, sizeof l->token,
                                  "s3://b/p/", err);
}

static void drop(listing *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof *l);
}

TEST(listing_keys_under_the_prefix_with_entities_decoded)
{
    static const char page[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name>"
        "<Prefix>p/</Prefix><KeyCount>6</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>"
        "<Contents><Key>p/r&amp;b/a &lt;1&gt;.mp4</Key><Size>10</Size></Contents>"
        "<Contents><Key>p/rock &apos;n&apos; roll/&quot;q&quot;.mkv</Key></Contents>"
        "<Contents><Key>p/x/&#38;&#x27;.mp4</Key></Contents>"
        "<Contents><Key>p/</Key></Contents>"          /* the folder itself: skipped */
        "<Contents><Key>other/v.mp4</Key></Contents>" /* not under the prefix */
        "<Contents><Key>p/&amp</Key></Contents>"      /* a bare '&' is kept */
        "<NextContinuationToken>1/a+b=</NextContinuationToken></ListBucketResult>";
    listing l;
    memset(&l, 0, sizeof l);
    reel_error err;
    CHECK_OK(parse(&l, page, "p/", &err));
    CHECK_EQ_INT(l.n, 4);
    CHECK_EQ_STR(l.names[0], "r&b/a <1>.mp4");
    CHECK_EQ_STR(l.names[1], "rock 'n' roll/\"q\".mkv");
    CHECK_EQ_STR(l.names[2], "x/&'.mp4");
    CHECK_EQ_STR(l.names[3], "&amp");
    CHECK_EQ_STR(l.token, "1/a+b=");
    /* the last page: no token; keys append to the ones before */
    CHECK_OK(parse(&l,
                   "<ListBucketResult><IsTruncated>false</IsTruncated>"
                   "<Contents><Key>p/z.mp4</Key></Contents></ListBucketResult>",
                   "p/", &err));
    CHECK_EQ_INT(l.n, 5);
    CHECK_EQ_STR(l.names[4], "z.mp4");
    CHECK_EQ_STR(l.token, "");
    drop(&l);
}

TEST(listing_answers_that_are_not_listings_fail)
{
    listing l;
    memset(&l, 0, sizeof l);
    reel_error err;
    CHECK_STATUS(parse(&l, "<Error><Code>AccessDenied</Code></Error>", "", &err), REEL_E_IO);
    CHECK(strstr(err.message, "s3://b/p/") != NULL);
    CHECK_STATUS(parse(&l, "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", "", &err),
                 REEL_E_IO);
    CHECK(strstr(err.message, "continuation token") != NULL);
    /* cut off inside an entry: the entry is not taken */
    CHECK_OK(parse(&l, "<ListBucketResult><Contents><Key>a.mp4</Key></Contents><Contents><Key>b.mp", "", &err));
    CHECK_EQ_INT(l.n, 1);
    CHECK_EQ_STR(l.names[0], "a.mp4");
    drop(&l);
}

TEST(listed_names_follow_the_local_scan_rules)
{
    char *names[] = { "zebra/b.MP4",     "archery/a.mp4", "archery/sub/deep.webm",
                      "top.mkv",         ".cache/x.mp4",  "zebra/.hidden.mp4",
                      "zebra/notes.txt", "bowling/",      "bowling/v 1.mov" };
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel__dataset_from_names(&ds, "s3://b/p/", "s3://b/p/", names, sizeof names / sizeof names[0], &err));
    CHECK_EQ_INT(reel_dataset_get_size(ds), 5);
    CHECK_EQ_INT(reel_dataset_get_num_classes(ds), 3);
    CHECK_EQ_STR(class_name(ds, 0), "archery");
    CHECK_EQ_STR(class_name(ds, 1), "bowling");
    CHECK_EQ_STR(class_name(ds, 2), "zebra");
    static const char *const want[] = { "s3://b/p/archery/a.mp4", "s3://b/p/archery/sub/deep.webm",
                                        "s3://b/p/bowling/v 1.mov", "s3://b/p/top.mkv", "s3://b/p/zebra/b.MP4" };
    static const int64_t labels[] = { 0, 0, 1, -1, 2 };
    for (size_t i = 0; i < 5; i++) {
        reel_sample s;
        CHECK_OK(reel_dataset_get(ds, i, &s, &err));
        CHECK_EQ_STR(s.path, want[i]);
        CHECK_EQ_INT(s.label, labels[i]);
    }
    reel_dataset_destroy(&ds);
    /* nothing that is a video: empty, naming the folder */
    char *none[] = { "a/readme.txt", ".x.mp4" };
    CHECK_STATUS(reel__dataset_from_names(&ds, "s3://b/p", "s3://b/p/", none, 2, &err), REEL_E_EMPTY);
    CHECK(strstr(err.message, "s3://b/p/") != NULL);
    CHECK(ds == NULL);
}
