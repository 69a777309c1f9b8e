/* libFuzzer target: the YAML config reader must answer any bytes with a
 * config or an error, never a crash, a leak or a hang. */
#include <stddef.h>
#include <stdint.h>

#include "app.h"
#include "config.h"

/* the plug-in tables handed to the config, as main does first */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    app_register();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct config c;
    struct error e;
    config_defaults(&c);
    if (config_parse(&c, (const char *)data, size, "fuzz.yaml", &e) == 0)
        config_validate(&c, &e);
    config_free(&c);
    return 0;
}
