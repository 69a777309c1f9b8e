/* torch.chunk's split rule as nn.DataParallel's scatter applies it
 * (docs/reference.md §2): chunks of ceil(rows / n) until the rows run out,
 * so a small batch can use fewer replicas than there are. */
#include "testutil.h"

#include "chunk.h"

static void expect_split(long rows, int n, const long *want, int want_chunks)
{
    long got[1100];
    int chunks = chunk_split(rows, n, got);
    assert_int_equal(chunks, want_chunks);
    long total = 0;
    for (int i = 0; i < n; i++) {
        long w = i < want_chunks ? want[i] : 0;
        if (got[i] != w)
            fail_msg("rows %ld over %d replicas: replica %d got %ld, want %ld", rows, n, i,
                     got[i], w);
        total += got[i];
    }
    assert_int_equal(total, rows);
}

static void test_reference_table(void **state)
{
    (void)state;
    /* the tutorial's batch of 30 and its last batch of 10 over 1, 2, 3, 8
     * replicas, as torch.chunk splits them (docs/reference.md §2) */
    expect_split(30, 1, (long[]){30}, 1);
    expect_split(10, 1, (long[]){10}, 1);
    expect_split(30, 2, (long[]){15, 15}, 2);
    expect_split(10, 2, (long[]){5, 5}, 2);
    expect_split(30, 3, (long[]){10, 10, 10}, 3);
    expect_split(10, 3, (long[]){4, 4, 2}, 3);
    expect_split(30, 8, (long[]){4, 4, 4, 4, 4, 4, 4, 2}, 8);
    expect_split(10, 8, (long[]){2, 2, 2, 2, 2}, 5); /* only 5 replicas used */
}

static void test_edge_cases(void **state)
{
    (void)state;
    expect_split(1, 1, (long[]){1}, 1);
    expect_split(1, 4, (long[]){1}, 1);            /* batch 1: one replica */
    expect_split(3, 8, (long[]){1, 1, 1}, 3);      /* batch smaller than replicas */
    expect_split(8, 8, (long[]){1, 1, 1, 1, 1, 1, 1, 1}, 8);
    expect_split(9, 8, (long[]){2, 2, 2, 2, 1}, 5); /* ceil(9/8) = 2 -> 5 chunks */
    expect_split(30, 16, (long[]){2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, 15);
    expect_split(100, 12, (long[]){9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 1}, 12);
    expect_split(17, 5, (long[]){4, 4, 4, 4, 1}, 5);
}

static void test_many_replicas(void **state)
{
    (void)state;
    /* every split must follow the rule: all chunks but the last are ceil-sized */
    for (int n = 1; n <= 1024; n = n < 16 ? n + 1 : n * 2)
        for (long rows = 1; rows <= 300; rows++) {
            long got[1100];
            int chunks = chunk_split(rows, n, got);
            long c = (rows + n - 1) / n;
            assert_int_equal(chunks, (rows + c - 1) / c);
            for (int i = 0; i < chunks - 1; i++)
                assert_int_equal(got[i], c);
            assert_true(got[chunks - 1] >= 1 && got[chunks - 1] <= c);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_table),
        cmocka_unit_test(test_edge_cases),
        cmocka_unit_test(test_many_replicas),
    };
    return cmocka_run_group_tests_name("chunk", tests, NULL, NULL);
}
