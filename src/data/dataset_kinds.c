/* The dataset kinds' table: a new kind is its file and a line here. */
#include "dataset_kind.h"

#include <string.h>

#include "config.h"

/* Each kind's struct, in its kind_*.c (dataset_kind.h declares again those
 * that other files name); a new kind is declared here. */
extern const struct dataset_kind dataset_kind_random, dataset_kind_idx, dataset_kind_cifar10,
    dataset_kind_folder;

static const struct dataset_kind *const kinds[] = {
    &dataset_kind_random,
    &dataset_kind_idx,
    &dataset_kind_cifar10,
    &dataset_kind_folder,
};

const struct dataset_kind *dataset_kind_find(const char *name)
{
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (strcmp(kinds[i]->name, name) == 0)
            return kinds[i];
    return NULL;
}

const char *dataset_kind_name(size_t i)
{
    return i < sizeof kinds / sizeof *kinds ? kinds[i]->name : NULL;
}

const struct dataset_kind *dataset_kind_of(const struct config *c)
{
    const struct dataset_kind *k = dataset_kind_find(c->dataset.kind);
    return k ? k : &dataset_kind_random;
}
