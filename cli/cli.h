/* cli.h: the `reel` command-line tool's subcommands, one source file each
 * (cmd_<name>.c). Each returns the process exit status: 0 on success,
 * 1 on a runtime error, 2 on bad usage (always < 128). */
#ifndef REEL_CLI_H
#define REEL_CLI_H

int reel_cli_info(int argc, char **argv);   /* reel info FILE... [--json] */
int reel_cli_frames(int argc, char **argv); /* reel frames FILE (--at|--times) ... */
int reel_cli_index(int argc, char **argv);  /* reel index FILE... */
int reel_cli_synth(int argc, char **argv);  /* reel synth OUT [options] / --dataset DIR */
int reel_cli_bench(int argc, char **argv);  /* reel bench PATH|MANIFEST|STORE [options] */
int reel_cli_pack(int argc, char **argv);   /* reel pack SOURCE OUT_DIR | --merge DIR | --verify DIR */

#endif
