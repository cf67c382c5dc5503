/*
 * cbhost.c - one CheckerBoard engine library in a process of its own, driven over stdin/stdout by
 * `uci-checkers cbengine` (uci_checkers/protocols/cbengine.py).
 *
 * What it is for: a Windows engine DLL on Linux.  Cross-compiled with mingw-w64 into cbhost.exe and
 * run under wine, it loads the DLL (LoadLibrary, GetProcAddress) and calls getmove/enginecommand
 * with the API's calling convention (cb_api.h), as CheckerBoard does.  The same source builds
 * natively (dlopen), so the tests check this protocol without wine.  Positions travel as FEN and
 * are turned into CheckerBoard's board by the bridge's own code (../checkerboard/board.c); the
 * rules of the game stay in Python (cbengine checks every move), so nothing here judges a move.
 *
 * Protocol: ASCII lines ending in "\n" both ways.
 *   at start          -> "cbhost 1 <exports>" once the library is loaded (exports: getmove,enginecommand
 *                        and islegal if present), or "error <text>" and exit status 2.
 *   command <text>    -> "reply <handled> <reply>": enginecommand(text).  Refused during a getmove.
 *   getmove <color> <maxtime> <info> <moreinfo> <FEN>
 *                     -> "status <text>" whenever the status string changed (looked at every 10 ms),
 *                        then "done <result> <jumps> <from> <to> <path> <del> <board>": getmove's return
 *                        value and the CBmove, every coordinate pair as a square number (0: not a dark
 *                        square of the board, e.g. a field the library left unset), path[0..n] and
 *                        del[0..jumps-1] comma-separated ("-" when empty or when jumps is out of range),
 *                        and the board after the call: the values of squares 1..32, comma-separated.
 *   stop              sets *playnow.
 *   quit, end of input   the process ends at once, also during a getmove (a hung library with it).
 *   a crash inside the library: "crash <what>" and exit status 3.
 * Nothing else is ever written to stdout; stderr is not used.
 */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#endif

#include "board.h"
#include "cb_api.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_SIZE 65536
#define POLL_MS 10
#define GETMOVE_STACK_BYTES (16u << 20)   /* engines recurse deeply; CheckerBoard gives them a large stack */
#define EXIT_LOAD_FAILED 2
#define EXIT_CRASHED 3

typedef int(CB_CALL *getmove_fn)(int board[8][8], int color, double maxtime, char str[CB_STATUS_SIZE],
                                 int *playnow, int info, int moreinfo, struct CBmove *move);
typedef int(CB_CALL *enginecommand_fn)(char command[CB_COMMAND_SIZE], char reply[CB_REPLY_SIZE]);

static getmove_fn lib_getmove;
static enginecommand_fn lib_enginecommand;
static int lib_has_islegal;

/* The one search: set up by the main thread, run by the worker, watched by the poller. */
static struct {
    int board[8][8];
    int color, info, moreinfo;
    double maxtime;
    char status[4 * CB_STATUS_SIZE];   /* room beyond the API's 1024 for a library that overruns it */
    char last_status[CB_STATUS_SIZE + 1];
    struct CBmove move;
    volatile int searching;
} search;
static volatile int playnow;

/* --- the platform: threads, locks, sleeping, leaving ------------------------------------------ */
#if defined(_WIN32)
#include <windows.h>

static CRITICAL_SECTION output_lock, search_lock;
static void locks_init(void) { InitializeCriticalSection(&output_lock); InitializeCriticalSection(&search_lock); }
static void lock(CRITICAL_SECTION *l) { EnterCriticalSection(l); }
static void unlock(CRITICAL_SECTION *l) { LeaveCriticalSection(l); }
static void sleep_ms(int ms) { Sleep((DWORD)ms); }

static void leave(int code)
{
    TerminateProcess(GetCurrentProcess(), (UINT)code);   /* no DLL detach code of a hung library */
}

/* Raw handles, not the C library's stdio: a thread blocked in fgets(stdin) holds a lock that
 * printf(stdout) in another thread waits for (seen under wine's msvcrt). */
static int write_out(const char *data, size_t n)
{
    DWORD written;
    return WriteFile(GetStdHandle(STD_OUTPUT_HANDLE), data, (DWORD)n, &written, NULL) && written == n ? 0 : -1;
}

static long read_in(char *buffer, size_t size)
{
    DWORD got = 0;
    if (!ReadFile(GetStdHandle(STD_INPUT_HANDLE), buffer, (DWORD)size, &got, NULL))
        return -1;
    return (long)got;
}

static int start_thread(DWORD(WINAPI *fn)(LPVOID), unsigned stack)
{
    HANDLE t = CreateThread(NULL, stack, fn, NULL, stack ? STACK_SIZE_PARAM_IS_A_RESERVATION : 0, NULL);
    if (!t)
        return -1;
    CloseHandle(t);
    return 0;
}
#define THREAD_FN(name) static DWORD WINAPI name(LPVOID unused)
#define THREAD_RETURN return 0

static LONG WINAPI on_crash(EXCEPTION_POINTERS *e)
{
    char text[96];
    DWORD written;
    int n = snprintf(text, sizeof(text), "\ncrash exception 0x%08lx in the engine library\n",
                     (unsigned long)e->ExceptionRecord->ExceptionCode);
    WriteFile(GetStdHandle(STD_OUTPUT_HANDLE), text, (DWORD)n, &written, NULL);   /* no lock: we are crashing */
    TerminateProcess(GetCurrentProcess(), EXIT_CRASHED);
    return EXCEPTION_EXECUTE_HANDLER;
}

static void install_crash_handler(void)
{
    /* no dialog for a crash or a missing DLL: nobody is there to click it away */
    SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX | SEM_NOOPENFILEERRORBOX);
    SetUnhandledExceptionFilter(on_crash);
}

static int load_library(const char *path, char *error, size_t size)
{
    HMODULE dll = LoadLibraryExA(path, NULL, LOAD_WITH_ALTERED_SEARCH_PATH);   /* its own folder for its DLLs */
    if (!dll) {
        DWORD code = GetLastError();
        char message[256] = "";
        FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, code, 0, message,
                       sizeof(message), NULL);
        message[strcspn(message, "\r\n")] = '\0';
        snprintf(error, size, "cannot load %s: Windows error %lu%s%s", path, (unsigned long)code,
                 message[0] ? ": " : "", message);
        return -1;
    }
    lib_getmove = (getmove_fn)(void (*)(void))GetProcAddress(dll, "getmove");
    lib_enginecommand = (enginecommand_fn)(void (*)(void))GetProcAddress(dll, "enginecommand");
    lib_has_islegal = GetProcAddress(dll, "islegal") != NULL;
    return 0;
}
#else
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t output_lock = PTHREAD_MUTEX_INITIALIZER, search_lock = PTHREAD_MUTEX_INITIALIZER;
static void locks_init(void) {}
static void lock(pthread_mutex_t *l) { pthread_mutex_lock(l); }
static void unlock(pthread_mutex_t *l) { pthread_mutex_unlock(l); }

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void leave(int code) { _exit(code); }

static int write_out(const char *data, size_t n)
{
    while (n > 0) {
        ssize_t w = write(1, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        data += w;
        n -= (size_t)w;
    }
    return 0;
}

static long read_in(char *buffer, size_t size)
{
    for (;;) {
        ssize_t got = read(0, buffer, size);
        if (got < 0 && errno == EINTR)
            continue;
        return (long)got;
    }
}

static int start_thread(void *(*fn)(void *), unsigned stack)
{
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (stack)
        pthread_attr_setstacksize(&attr, stack);
    int r = pthread_create(&t, &attr, fn, NULL);
    pthread_attr_destroy(&attr);
    return r == 0 ? 0 : -1;
}
#define THREAD_FN(name) static void *name(void *unused)
#define THREAD_RETURN return NULL

static void on_crash(int sig)
{
    char text[64] = "\ncrash signal ";
    size_t n = strlen(text);
    if (sig >= 10)
        text[n++] = (char)('0' + sig / 10);
    text[n++] = (char)('0' + sig % 10);
    memcpy(text + n, " in the engine library\n", 23);
    n += 23;
    ssize_t ignored = write(1, text, n);   /* async-signal-safe */
    (void)ignored;
    _exit(EXIT_CRASHED);
}

static void install_crash_handler(void)
{
    static const int signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = on_crash;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
        sigaction(signals[i], &action, NULL);
    signal(SIGPIPE, SIG_IGN);   /* cbengine gone: writes fail, the next read sees the end of input */
}

static int load_library(const char *path, char *error, size_t size)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(error, size, "cannot load %s: %s", path, dlerror());
        return -1;
    }
    *(void **)&lib_getmove = dlsym(lib, "getmove");
    *(void **)&lib_enginecommand = dlsym(lib, "enginecommand");
    lib_has_islegal = dlsym(lib, "islegal") != NULL;
    return 0;
}
#endif

/* --- output ------------------------------------------------------------------------------------ */

static void emit(const char *format, ...)
{
    static char text[LINE_SIZE];
    va_list args;
    va_start(args, format);
    lock(&output_lock);
    int n = vsnprintf(text, sizeof(text) - 1, format, args);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof(text) - 2)
        n = (int)sizeof(text) - 2;
    text[n++] = '\n';
    write_out(text, (size_t)n);     /* a failed write: cbengine is gone, the next read ends the process */
    unlock(&output_lock);
    va_end(args);
}

/* The next input line without its end of line; 0 at the end of input. */
static int next_line(char *line, size_t size)
{
    static char buffer[LINE_SIZE];
    static size_t buffered;
    static int eof;
    for (;;) {
        char *newline = memchr(buffer, '\n', buffered);
        if (newline || (eof && buffered > 0) || buffered == sizeof(buffer)) {
            size_t length = newline ? (size_t)(newline - buffer) : buffered;
            size_t copy = length < size - 1 ? length : size - 1;
            memcpy(line, buffer, copy);
            line[copy] = '\0';
            size_t consumed = newline ? length + 1 : length;
            memmove(buffer, buffer + consumed, buffered - consumed);
            buffered -= consumed;
            line[strcspn(line, "\r")] = '\0';
            return 1;
        }
        if (eof)
            return 0;
        long got = read_in(buffer + buffered, sizeof(buffer) - buffered);
        if (got <= 0)
            eof = 1;
        else
            buffered += (size_t)got;
    }
}

/* At most limit bytes of text, as one line: control characters become spaces, trailing spaces go. */
static void one_line(char *out, const char *text, size_t limit)
{
    size_t n = 0;
    while (n < limit && text[n]) {
        unsigned char c = (unsigned char)text[n];
        out[n] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
        n++;
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

static int square_of(struct coor c) { return board_coords_square(c.x, c.y); }

/* The 32 dark squares of the board after getmove, in square order: engines such as Cake and GuiNN
 * leave the CBmove alone and only play the move on the board. */
static void board_values(char *out, size_t size, int board[8][8])
{
    size_t used = 0;
    for (int square = 1; square <= BOARD_SQUARES && used < size; square++) {
        int x, y;
        board_square_coords(square, &x, &y);
        used += (size_t)snprintf(out + used, size - used, "%s%d", square > 1 ? "," : "", board[x][y]);
    }
}

static void square_list(char *out, size_t size, const struct coor *coords, int count)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < count && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%d", i ? "," : "", square_of(coords[i]));
    if (count <= 0)
        snprintf(out, size, "-");
}

/* --- the search ---------------------------------------------------------------------------------- */

/* Report a changed status string; the caller holds search_lock. */
static void report_status(void)
{
    char now[CB_STATUS_SIZE + 1];
    one_line(now, search.status, CB_STATUS_SIZE);
    if (now[0] && strcmp(now, search.last_status) != 0) {
        memcpy(search.last_status, now, sizeof(now));
        emit("status %s", now);
    }
}

THREAD_FN(poller)
{
    (void)unused;
    for (;;) {
        sleep_ms(POLL_MS);
        lock(&search_lock);
        if (search.searching)
            report_status();
        unlock(&search_lock);
    }
    THREAD_RETURN;
}

THREAD_FN(worker)
{
    (void)unused;
    int result = lib_getmove(search.board, search.color, search.maxtime, search.status, (int *)&playnow,
                             search.info, search.moreinfo, &search.move);
    char path[16 * CB_MOVE_SLOTS], del[16 * CB_MOVE_SLOTS], after[16 * BOARD_SQUARES];
    struct CBmove *m = &search.move;
    int jumps_ok = m->jumps >= 0 && m->jumps < CB_MOVE_SLOTS;
    square_list(path, sizeof(path), m->path, jumps_ok ? (m->jumps > 0 ? m->jumps + 1 : 2) : 0);
    square_list(del, sizeof(del), m->del, jumps_ok ? m->jumps : 0);
    board_values(after, sizeof(after), search.board);
    lock(&search_lock);
    report_status();
    search.searching = 0;             /* before "done": the next request may follow it at once */
    emit("done %d %d %d %d %s %s %s", result, m->jumps, square_of(m->from), square_of(m->to), path, del, after);
    unlock(&search_lock);
    THREAD_RETURN;
}

static void start_getmove(const char *args)
{
    int color, info, moreinfo, used = 0;
    double maxtime;
    char error[256];
    board_position pos;
    if (sscanf(args, "%d %lf %d %d %n", &color, &maxtime, &info, &moreinfo, &used) != 4 || used == 0) {
        emit("error getmove needs: getmove <color> <maxtime> <info> <moreinfo> <FEN>");
        return;
    }
    if (board_from_fen(args + used, &pos, error, sizeof(error)) != 0) {
        emit("error getmove: %s", error);
        return;
    }
    lock(&search_lock);
    if (search.searching) {
        unlock(&search_lock);
        emit("error getmove: a getmove is already running");
        return;
    }
    board_to_cb(&pos, search.board);
    search.color = color;
    search.maxtime = maxtime;
    search.info = info;
    search.moreinfo = moreinfo;
    memset(search.status, 0, sizeof(search.status));
    search.last_status[0] = '\0';
    memset(&search.move, 0xff, sizeof(search.move));   /* every field -1: what the library leaves unset shows */
    playnow = 0;
    search.searching = 1;
    unlock(&search_lock);
    if (start_thread(worker, GETMOVE_STACK_BYTES) != 0) {
        lock(&search_lock);
        search.searching = 0;
        unlock(&search_lock);
        emit("error getmove: cannot start a thread");
    }
}

static void run_command(const char *text)
{
    char command[CB_COMMAND_SIZE], reply[4 * CB_REPLY_SIZE], shown[CB_REPLY_SIZE + 1];
    if (search.searching) {
        emit("reply 0 busy: a getmove is running");
        return;
    }
    if (strlen(text) >= sizeof(command)) {
        emit("reply 0 command longer than %d characters", CB_COMMAND_SIZE - 1);
        return;
    }
    memset(command, 0, sizeof(command));
    memset(reply, 0, sizeof(reply));
    strcpy(command, text);            /* a fresh copy: libraries may tokenise it in place */
    int handled = lib_enginecommand(command, reply);
    one_line(shown, reply, CB_REPLY_SIZE);
    emit("reply %d %s", handled, shown);
}

int main(int argc, char **argv)
{
    static char line[LINE_SIZE];
    char error[1024];
    locks_init();
    install_crash_handler();
    if (argc != 2) {
        emit("error usage: cbhost LIBRARY");
        return EXIT_LOAD_FAILED;
    }
    if (load_library(argv[1], error, sizeof(error)) != 0) {
        emit("error %s", error);
        return EXIT_LOAD_FAILED;
    }
    if (!lib_getmove || !lib_enginecommand) {
        emit("error %s does not export %s: not a CheckerBoard engine", argv[1],
             !lib_getmove && !lib_enginecommand ? "getmove and enginecommand" : !lib_getmove ? "getmove" : "enginecommand");
        return EXIT_LOAD_FAILED;
    }
    if (start_thread(poller, 0) != 0) {
        emit("error cannot start a thread");
        return EXIT_LOAD_FAILED;
    }
    emit("cbhost 1 getmove,enginecommand%s", lib_has_islegal ? ",islegal" : "");
    while (next_line(line, sizeof(line))) {
        if (strncmp(line, "command ", 8) == 0)
            run_command(line + 8);
        else if (strcmp(line, "command") == 0)
            run_command("");
        else if (strncmp(line, "getmove ", 8) == 0)
            start_getmove(line + 8);
        else if (strcmp(line, "stop") == 0)
            playnow = 1;
        else if (strcmp(line, "quit") == 0)
            break;
        else if (line[0])
            emit("error unknown request: %.80s", line);
    }
    leave(0);
    return 0;
}
