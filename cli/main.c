/* main.c: the `reel` command-line tool's dispatcher.
 *
 *   reel <command> [args]      runs cli/cmd_<command>.c with argv[0] = command
 *   reel help [command]        lists the commands (or runs `command --help`)
 *   reel --version [--build]   library and FFmpeg versions (--build: JSON with the configure line)
 *
 * Exit status: whatever the command returns; 2 for bad usage. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "reel/reel.h"

typedef struct reel_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} reel_command;

static const reel_command k_commands[] = {
    { "info", reel_cli_info, "print stream metadata and the exact frame count" },
    { "frames", reel_cli_frames, "extract exact frames by index or time (as images or raw RGB)" },
    { "index", reel_cli_index, "build and save the sidecar frame index (FILE.reelidx)" },
    { "synth", reel_cli_synth, "write synthetic test videos whose frames carry their own index" },
    { "bench", reel_cli_bench, "run the batch loader over a dataset or store: frames/s, coverage, bottleneck" },
    { "pack", reel_cli_pack, "decode a dataset once into a packed store of sequential shards" },
};
#define NUM_COMMANDS (sizeof k_commands / sizeof k_commands[0])

static void print_usage(FILE *out)
{
    fprintf(out,
            "reel %s: frame-exact video decoding for deep-learning training\n"
            "\n"
            "usage: reel <command> [args]\n"
            "       reel help [command]\n"
            "       reel --version [--build]\n"
            "\n"
            "commands:\n",
            reel_version());
    for (size_t i = 0; i < NUM_COMMANDS; i++) fprintf(out, "  %-8s %s\n", k_commands[i].name, k_commands[i].summary);
    fprintf(out, "\n"
                 "`reel <command> --help` describes a command's options.\n");
}

static const reel_command *find_command(const char *name)
{
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        if (strcmp(k_commands[i].name, name) == 0) return &k_commands[i];
    return NULL;
}

static int unknown_command(const char *name)
{
    fprintf(stderr, "reel: unknown command '%s'\n", name);
    fprintf(stderr, "commands:");
    for (size_t i = 0; i < NUM_COMMANDS; i++) fprintf(stderr, " %s", k_commands[i].name);
    fprintf(stderr, "\nrun 'reel help' for more.\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];

    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0 || strcmp(cmd, "version") == 0) {
        printf("reel %s\n", reel_version());
        printf("FFmpeg: %s\n", reel_ffmpeg_versions());
        if (argc >= 3 && strcmp(argv[2], "--build") == 0) {
            char *info = reel_build_info(); /* JSON: FFmpeg's configure line, library versions */
            if (info) printf("%s\n", info);
            reel_free(info);
        }
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc >= 3) {
            const reel_command *c = find_command(argv[2]);
            if (!c) return unknown_command(argv[2]);
            char help_flag[] = "--help";
            char *sub_argv[] = { argv[2], help_flag, NULL };
            return c->run(2, sub_argv);
        }
        print_usage(stdout);
        return 0;
    }

    const reel_command *c = find_command(cmd);
    if (!c) {
        if (cmd[0] == '-') {
            fprintf(stderr, "reel: unknown option '%s'\n", cmd);
            print_usage(stderr);
            return 2;
        }
        return unknown_command(cmd);
    }
    /* The command sees argv[0] = its own name, as if it were its own program. */
    return c->run(argc - 1, argv + 1);
}
