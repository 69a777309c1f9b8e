/* What the config needs to know of the plug-in tables, handed to it from
 * here at start-up so that core/ looks only down: the names each plug-in
 * key accepts (model.loss, parallel.device, parallel.comm, dataset.kind,
 * report.format), and the rules that read a plug-in's fields or names. */
#include "app.h"

#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "comm.h"
#include "config.h"
#include "dataset_kind.h"
#include "ddp.h"
#include "gen.h"
#include "loss.h"
#include "tune.h"

/* "x, y or auto": the backends whose replicas run on numbered devices (one
 * this build lacks among them), for parallel.devices' error. */
static const char *device_backends(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; backend_name(i) && used < n; i++)
        if (!backend_at(i) || backend_at(i)->has_devices)
            used += (size_t)snprintf(buf + used, n - used, "%s, ", backend_name(i));
    used = used < n ? used : n - 1;
    if (used < 2)
        snprintf(buf, n, "auto");
    else
        snprintf(buf + used - 2, n - (used - 2), " or auto"); // over the last ", "
    return buf;
}

/* parallel.devices names devices only on a backend that has them. */
static int rule_devices(const struct config *c, struct error *e)
{
    const struct backend *be = backend_find(c->parallel.device);
    char names[128];
    if (c->parallel.n_devices > 0 && be && !be->has_devices)
        return error_set(e, "parallel.devices: device ids need parallel.device: %s; on the "
                            "%s use parallel.replicas", device_backends(names, sizeof names),
                         c->parallel.device);
    return 0;
}

/* ddp: an engine for the backend's memory. */
static int rule_comm(const struct config *c, struct error *e)
{
    const struct backend *be = backend_find(c->parallel.device);
    if (comm_engine_device_memory(c->parallel.comm) && be && !be->device_memory)
        return error_set(e, "parallel.comm: %s needs parallel.device: cuda; the %s backend's "
                            "ranks use %s", c->parallel.comm, c->parallel.device, comm_auto(false));
    return 0;
}

/* The dataset's keys against its kind: labels, files and transforms only for
 * labelled data; the emulated sample cost only for the random dataset. */
static int rule_data_kind(const struct config *c, struct error *e)
{
    if (!dataset_kind_of(c)->labelled) { // the in-memory random data
        const struct loss_fn *loss = loss_find(c->model.loss);
        if (loss && loss->labels)
            return error_set(e, "model.loss: %s needs labelled data (dataset.kind idx, "
                                "cifar10 or folder); the random dataset has real-valued targets",
                             loss->name);
        if (c->dataset.path[0] || c->dataset.eval_path[0])
            return error_set(e, "%s: only for dataset.kind idx, cifar10 or folder",
                             c->dataset.path[0] ? "dataset.path" : "dataset.eval_path");
        const char *t = c->transform.resize ? "resize" : c->transform.crop ? "crop"
                        : c->transform.pad ? "pad" : c->transform.hflip ? "hflip"
                        : c->transform.mean.n ? "mean" : c->transform.std.n ? "std" : NULL;
        if (t) // the key named first: the file's line goes in front (config_validate)
            return error_set(e, "transform.%s: only for image data (dataset.kind idx, cifar10 "
                                "or folder)", t);
    } else if (!c->dataset.path[0]) {
        return error_set(e, "dataset.path: dataset.kind %s needs a path", c->dataset.kind);
    } else if (c->dataset.sample_cost_us > 0) {
        return error_set(e, "dataset.sample_cost_us: only for the random dataset; dataset.kind "
                            "%s costs its real reading, decoding and transforms", c->dataset.kind);
    }
    for (int i = 0; i < c->n_sweep && dataset_kind_of(c)->labelled; i++) {
        const char *k = c->sweep[i].key; // the data decides them: every point the same run
        if (!strcmp(k, "dataset.length") || !strcmp(k, "dataset.features") ||
            !strcmp(k, "model.out_features"))
            return error_set(e, "sweep: %s: dataset.kind %s takes it from its files (samples, "
                                "pixels, classes): every point would be the same run", k,
                             c->dataset.kind);
    }
    return 0;
}

/* dataset.make: --make-dataset's options for this config's kind. */
static int rule_data_make(const struct config *c, struct error *e)
{
    const struct dataset_kind *made;
    char name[64];
    if (!c->dataset.make[0])
        return 0;
    if (!dataset_kind_of(c)->labelled)
        return error_set(e, "dataset.make: only for dataset.kind idx, cifar10 or folder");
    if (gen_spec_check(c->dataset.make, &made, name, sizeof name, e)) {
        error_wrap(e, "dataset.make");
        return -1;
    }
    if (made != dataset_kind_of(c))
        return error_set(e, "dataset.make: \"%s\" makes a %s dataset, but dataset.kind is %s",
                         c->dataset.make, made->name, c->dataset.kind);
    const char *path = c->dataset.path, *slash = strrchr(path, '/');
    if (name[0] && strcmp(slash ? slash + 1 : path, name) != 0)
        return error_set(e, "dataset.make: \"%s\" writes DIR/%s (and the rest); dataset.path "
                            "must name it, found %s", c->dataset.make, name, path);
    return 0;
}

/* ddp under mpirun (the launcher's rank count; ddp_open checks the
 * communicator's too): every point's random data gives each rank a sample,
 * and a batch with drop_last (a file's length is known when it is read). */
static int rule_ddp_share(const struct config *c, struct error *e)
{
    int rank, world = comm_launched_world(&rank);
    if (strcmp(c->parallel.mode, "ddp") || world <= 1 || dataset_kind_of(c)->labelled)
        return 0;
    return ddp_check_share(c, world, e);
}

/* tune.knobs: names of the loader knobs --tune may change (checked on every
 * run, as every key's value is, with its line in the file). */
static int rule_tune_knobs(const struct config *c, struct error *e)
{
    unsigned mask;
    return tune_parse_knobs(c->tune.knobs, &mask, e);
}

void app_register(void)
{
    config_register_names("model.loss", loss_name);
    config_register_names("parallel.device", backend_name);
    config_register_names("parallel.comm", comm_engine_name);
    config_register_names("dataset.kind", dataset_kind_name);
    config_register_names("report.format", renderer_name);
    config_register_rule(rule_devices);
    config_register_rule(rule_comm);
    config_register_rule(rule_data_kind);
    config_register_rule(rule_data_make);
    config_register_rule(rule_tune_knobs);
    config_register_rule(rule_ddp_share);
}
