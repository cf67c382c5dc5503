/*
 * cb_test_engine.c - a CheckerBoard engine library for the tests of `uci-checkers cbengine`.
 *
 * Not an engine: getmove plays the first legal move (the bridge's move generator, board.c), and
 * its mode makes it misbehave in the ways a real library can.  The mode comes from the environment
 * (CB_TEST_MODE, read on the first call) or from enginecommand "set mode <mode>":
 *   first    plays at once (the default), filling the CBmove and playing it on the board
 *   board    plays at once on the board only, the CBmove left alone (as Cake and GuiNN do)
 *   timed    waits until maxtime has passed or *playnow is set, then plays (a well-behaved engine)
 *   wait     waits for *playnow however long that takes, then plays
 *   ignore   never returns: ignores *playnow
 *   illegal  returns a move that is not legal (a piece moving to a square it cannot reach), board untouched
 *   none     returns without a move (CBmove and board untouched)
 *   crash    writes through a null pointer inside getmove
 *   status   writes "cb_test_engine depth <d>/<d>  eval <+m.mm>  nodes <n>" once per 10 ms step (depth
 *            1, 2, ...) until maxtime or *playnow, then plays
 * Other enginecommands: "name" (what "set name <text>" set), "about", "get protocolversion" (2, or what "set protocolversion <n>"
 * set), "get gametype", "get hashsize"/"set hashsize <MB>" (1..4096), "get mode", "get cwd" (the working
 * directory), "set result <n>" (getmove's return value, default CB_UNKNOWN).  When CB_TEST_LOG names a
 * file, every call is appended to it: "getmove color=<c> maxtime=<s> info=<i> moreinfo=<m> fen=<FEN>"
 * and "command <text> -> <handled> <reply>".
 */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#endif

#include "board.h"
#include "cb_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#include <direct.h>
#include <windows.h>
static void sleep_ms(int ms) { Sleep((DWORD)ms); }
static double now_s(void) { return (double)GetTickCount64() / 1000.0; }
static char *current_dir(char *out, int size) { return _getcwd(out, size); }
#else
#include <time.h>
#include <unistd.h>
static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
static char *current_dir(char *out, int size) { return getcwd(out, (size_t)size); }
#endif

static char mode[32] = "";
static char name[64] = "cb_test_engine";
static int hash_mb = 32;
static int protocol_version = 2;
static int result_code = CB_UNKNOWN;

static void log_line(const char *format, const char *a, const char *b)
{
    const char *path = getenv("CB_TEST_LOG");
    if (!path || !path[0])
        return;
    FILE *f = fopen(path, "a");
    if (!f)
        return;
    fprintf(f, format, a, b);
    fputc('\n', f);
    fclose(f);
}

static const char *current_mode(void)
{
    if (!mode[0]) {
        const char *env = getenv("CB_TEST_MODE");
        snprintf(mode, sizeof(mode), "%s", env && env[0] ? env : "first");
    }
    return mode;
}

static int mode_is(const char *name) { return strcmp(current_mode(), name) == 0; }

static void wait_for(volatile int *playnow, double until)
{
    while (!*playnow && (until <= 0 || now_s() < until))
        sleep_ms(1);
}

CB_EXPORT int CB_CALL getmove(int board[8][8], int color, double maxtime, char str[CB_STATUS_SIZE],
                              int *playnow, int info, int moreinfo, struct CBmove *move)
{
    board_position pos;
    board_move moves[BOARD_MAX_MOVES];
    char fen[BOARD_FEN_SIZE], error[256], details[128];
    double started = now_s();
    volatile int *stop = playnow;

    if (board_from_cb((const int(*)[8])board, color, &pos, error, sizeof(error)) != 0) {
        snprintf(str, CB_STATUS_SIZE, "cb_test_engine: %s", error);
        return CB_UNKNOWN;
    }
    board_to_fen(&pos, fen);
    snprintf(details, sizeof(details), "color=%d maxtime=%.3f info=%d moreinfo=%d", color, maxtime, info, moreinfo);
    log_line("getmove %s fen=%s", details, fen);
    int n = board_legal_moves(&pos, moves, BOARD_MAX_MOVES);
    if (n == 0) {
        snprintf(str, CB_STATUS_SIZE, "cb_test_engine: no legal move");
        return CB_LOSS;
    }
    if (mode_is("timed"))
        wait_for(stop, started + maxtime);
    else if (mode_is("wait"))
        wait_for(stop, 0);
    else if (mode_is("ignore"))
        for (;;)
            sleep_ms(10);
    else if (mode_is("crash")) {
        volatile int *nowhere = NULL;
        *nowhere = 1;
    } else if (mode_is("none")) {
        snprintf(str, CB_STATUS_SIZE, "cb_test_engine: no move for you");
        return result_code;
    } else if (mode_is("status")) {
        for (int depth = 1; !*stop && now_s() < started + maxtime; depth++) {
            snprintf(str, CB_STATUS_SIZE, "cb_test_engine depth %d/%d  eval %+.2f  nodes %d", depth, depth + 2,
                     depth * 0.05, depth * 1000);
            sleep_ms(10);
        }
    }
    board_move chosen = moves[0];
    if (mode_is("illegal")) {
        /* the first piece jumps to the first empty dark square it cannot reach */
        int from = chosen.squares[0];
        for (int to = 1; to <= BOARD_SQUARES; to++) {
            int reachable = 0;
            for (int i = 0; i < n; i++)
                reachable |= moves[i].squares[0] == from && moves[i].squares[moves[i].n_squares - 1] == to;
            if (to != from && !pos.piece[to] && !reachable) {
                chosen.squares[1] = to;
                break;
            }
        }
        chosen.n_squares = 2;
        chosen.n_captured = 0;
    }
    if (!mode_is("board"))
        board_fill_cbmove(&pos, &chosen, move);
    if (!mode_is("illegal")) {
        board_play(&pos, &chosen);
        board_to_cb(&pos, board);
    }
    if (!mode_is("status"))
        snprintf(str, CB_STATUS_SIZE, "cb_test_engine plays its first legal move");
    return result_code;
}

static int reply_with(char *reply, int handled, const char *text)
{
    snprintf(reply, CB_REPLY_SIZE, "%s", text);
    return handled;
}

static int command(const char *cmd, char *reply)
{
    char value[CB_COMMAND_SIZE];
    if (strcmp(cmd, "name") == 0)
        return reply_with(reply, 1, name);
    if (strncmp(cmd, "set name ", 9) == 0) {
        snprintf(name, sizeof(name), "%s", cmd + 9);
        return reply_with(reply, 1, "ok");
    }
    if (strcmp(cmd, "about") == 0)
        return reply_with(reply, 1, "cb_test_engine: a CheckerBoard library for the tests of uci-checkers cbengine");
    if (strcmp(cmd, "get protocolversion") == 0) {
        snprintf(reply, CB_REPLY_SIZE, "%d", protocol_version);
        return 1;
    }
    if (strcmp(cmd, "get gametype") == 0)
        return reply_with(reply, 1, "21");
    if (strcmp(cmd, "get hashsize") == 0) {
        snprintf(reply, CB_REPLY_SIZE, "%d", hash_mb);
        return 1;
    }
    if (strcmp(cmd, "get mode") == 0)
        return reply_with(reply, 1, current_mode());
    if (strcmp(cmd, "get cwd") == 0)
        return current_dir(reply, CB_REPLY_SIZE) ? 1 : reply_with(reply, 0, "getcwd failed");
    int mb;
    if (sscanf(cmd, "set hashsize %d", &mb) == 1) {
        if (mb < 1 || mb > 4096)
            return reply_with(reply, 0, "hashsize must be 1..4096 MB");
        hash_mb = mb;
        return reply_with(reply, 1, "ok");
    }
    if (sscanf(cmd, "set protocolversion %d", &protocol_version) == 1)
        return reply_with(reply, 1, "ok");
    if (sscanf(cmd, "set result %d", &result_code) == 1)
        return reply_with(reply, 1, "ok");
    if (sscanf(cmd, "set mode %31s", value) == 1) {
        snprintf(mode, sizeof(mode), "%s", value);
        return reply_with(reply, 1, "ok");
    }
    return reply_with(reply, 0, "?");
}

CB_EXPORT int CB_CALL enginecommand(char cmd[CB_COMMAND_SIZE], char reply[CB_REPLY_SIZE])
{
    char handled_text[16];
    int handled = command(cmd, reply);
    snprintf(handled_text, sizeof(handled_text), "%d", handled);
    char shown[CB_REPLY_SIZE + 32];
    snprintf(shown, sizeof(shown), "%s %s", handled_text, reply);
    log_line("command %s -> %s", cmd, shown);
    return handled;
}

CB_EXPORT int CB_CALL islegal(int board[8][8], int color, int from, int to, struct CBmove *move)
{
    (void)board, (void)color, (void)from, (void)to, (void)move;
    return 0;   /* CheckerBoard uses its own move generator for English checkers */
}
