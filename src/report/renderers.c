/* The output formats: report.format's values are this table's names (the
 * config is handed them at start-up), and every result reaches stdout through
 * one of them. A format is one render_*.c file and one line here. */
#include "report.h"

#include <string.h>

/* the compare hooks of the renderers (render_*.c) */
int report_compare_text(FILE *f, const struct compare_result *c);
int report_compare_json(FILE *f, const struct compare_result *c);
int report_compare_csv(FILE *f, const struct compare_result *c);
int report_compare_markdown(FILE *f, const struct compare_result *c);

static const struct renderer renderers[] = {
    {"text", report_text, true, report_compare_text},
    {"json", report_json_print, false, report_compare_json},
    {"csv", report_csv, false, report_compare_csv},
    {"markdown", report_markdown, false, report_compare_markdown},
};
enum { N_RENDERERS = sizeof renderers / sizeof renderers[0] };

const struct renderer *renderer_find(const char *name)
{
    for (int i = 0; i < N_RENDERERS; i++)
        if (strcmp(renderers[i].name, name) == 0)
            return &renderers[i];
    return NULL;
}

const char *renderer_name(size_t i) { return i < N_RENDERERS ? renderers[i].name : NULL; }
