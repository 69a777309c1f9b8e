/* torch.chunk's split rule, which nn.DataParallel's scatter uses: chunks of
 * ceil(rows / replicas) until the rows run out, so a small batch can use
 * fewer replicas than there are. */
#ifndef DPBENCH_CHUNK_H
#define DPBENCH_CHUNK_H

/* Writes the rows of each chunk into sizes[0..replicas) (0 for replicas that
 * get no chunk) and returns the number of chunks. */
int chunk_split(long rows, int replicas, long *sizes);

#endif
