#include "chunk.h"

int chunk_split(long rows, int replicas, long *sizes)
{
    long c = (rows + replicas - 1) / replicas;
    int n = 0;
    for (int r = 0; r < replicas; r++) {
        long take = rows > c ? c : rows;
        sizes[r] = take;
        rows -= take;
        if (take > 0)
            n++;
    }
    return n;
}
