/* The config's internals, shared by its files: the key table (config.c), the
 * setters (config_set.c), the YAML reader (config_yaml.c) and the rules
 * (config_rules.c). Nothing outside core/config*.c includes this. */
#ifndef DPBENCH_CONFIG_KEYS_H
#define DPBENCH_CONFIG_KEYS_H

#include <stddef.h>

#include "config.h"

enum key_type { KEY_INT, KEY_BOOL, KEY_FLOAT, KEY_STRING, KEY_ENUM, KEY_INT_LIST, KEY_FLOAT_LIST };

struct key {
    const char *path;
    enum key_type type;
    size_t offset;       // into struct config
    const char *def;     // default, as text; parsed by the same setter as input
    double min, max;     // inclusive range for numbers, list items and string lengths
    const char *choices; // "a|b|c" for KEY_ENUM; "*" stands for a plug-in table's names
    unsigned flags;      // KEY_DATA or 0
    const char *help;
};

/* the dataset depends on the key: points that differ in it cannot share one */
#define KEY_DATA 1u

extern const struct key config_keys[]; // (config_n_keys) every key, in --help-config's order
extern const size_t config_n_keys;
/* The config's sections, in the YAML: "dataset", "model", ... */
#define CONFIG_MAX_SECTIONS 16
extern const char *const config_sections[];
extern const size_t config_n_sections;

/* The key at path ("loader.num_workers"), NULL when there is none. */
const struct key *key_find(const char *path);
/* An unknown key refused, with the nearest known one suggested: -1. */
int unknown_key(const char *path, struct error *e);
/* k's allowed values as "a|b|c", a plug-in table's names for "*". */
const char *key_choices(const struct key *k, char *buf, size_t n);
/* Sets key k of c from its text, checked as the key's type and range say. */
int set_value(struct config *c, const struct key *k, const char *v, struct error *e);
/* A sweep's key, then its values one at a time (config_set.c). */
int sweep_add(struct config *c, const char *key, struct error *e);
int sweep_value(struct config *c, const char *v, struct error *e);

#endif
