/* util.h: small helpers shared by the CLI's subcommands: JSON string
 * output, list and size parsing. */
#ifndef REEL_CLI_UTIL_H
#define REEL_CLI_UTIL_H

#include <stdint.h>
#include <stdio.h>

/* Writes s as a JSON string literal (with quotes). */
void cli_json_str(FILE *fp, const char *s);

/* Parses "a,b,c" into a newly allocated array; returns count or -1. */
long cli_parse_i64_list(const char *s, int64_t **out);
long cli_parse_f64_list(const char *s, double **out);

/* Parses "WxH" (either may be 0 to keep the aspect). Returns 0 on success. */
int cli_parse_size(const char *s, int *w, int *h);

/* Parses "x,y,w,h". Returns 0 on success. */
int cli_parse_crop(const char *s, int *x, int *y, int *w, int *h);

/* Parses a non-negative int; returns 0 on success. */
int cli_parse_int(const char *s, int *v);

#endif
