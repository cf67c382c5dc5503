/*
 * platform.c - POSIX and Win32 implementations of platform.h.
 *
 * POSIX: fork + exec of "/bin/sh -c 'exec <command>'" in a new process group (setpgid), so a
 * kill of the group also ends anything the engine started; pipes for stdin/stdout, stderr
 * inherited; writes with SIGPIPE blocked so a dead engine cannot kill the host program.
 * Win32: CreateProcess with inheritable pipe ends, no console window, the child placed in a job
 * object that kills everything in it when the job is closed or terminated; stderr goes to NUL
 * (CheckerBoard has no console).  Reads poll (poll() / PeekNamedPipe) up to a deadline.
 */
#if !defined(_WIN32)
#define _GNU_SOURCE   /* dladdr */
#endif

#include "platform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Any object inside this library: its address tells the loader which file we were loaded from. */
static const char library_anchor = 0;

/* --- shared line splitting ------------------------------------------------------------------- */

/* Take one line out of the buffer if there is one (or the rest at end of output / when full). */
static int take_line(engine_process *p, char *line, int size, int force)
{
    char *newline = memchr(p->buffer, '\n', p->buffered);
    size_t length;
    size_t consumed;
    if (newline) {
        length = (size_t)(newline - p->buffer);
        consumed = length + 1;
    } else if (force && p->buffered > 0) {
        length = p->buffered;
        consumed = length;
    } else {
        return 0;
    }
    size_t copy = length < (size_t)(size - 1) ? length : (size_t)(size - 1);
    memcpy(line, p->buffer, copy);
    line[copy] = '\0';
    if (copy > 0 && line[copy - 1] == '\r')
        line[copy - 1] = '\0';
    memmove(p->buffer, p->buffer + consumed, p->buffered - consumed);
    p->buffered -= consumed;
    return 1;
}

#if defined(_WIN32)
/* ============================================================================ Win32 ========= */
#include <windows.h>

struct platform_lock {
    SRWLOCK lock;
};
static struct platform_lock session_lock = {SRWLOCK_INIT};
static struct platform_lock config_lock = {SRWLOCK_INIT};

platform_lock *platform_lock_session(void) { return &session_lock; }
platform_lock *platform_lock_config(void) { return &config_lock; }
void platform_lock_acquire(platform_lock *lock) { AcquireSRWLockExclusive(&lock->lock); }
int platform_lock_try(platform_lock *lock) { return TryAcquireSRWLockExclusive(&lock->lock) ? 1 : 0; }
void platform_lock_release(platform_lock *lock) { ReleaseSRWLockExclusive(&lock->lock); }

long long platform_now_ms(void) { return (long long)GetTickCount64(); }
void platform_sleep_ms(int ms) { Sleep((DWORD)ms); }

void platform_library_path(char *out, int size)
{
    HMODULE module = NULL;
    out[0] = '\0';
    if (GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                           (LPCSTR)&library_anchor, &module)) {
        DWORD n = GetModuleFileNameA(module, out, (DWORD)size);
        if (n == 0 || n >= (DWORD)size)
            out[0] = '\0';
    }
}

static void close_handle(void **h)
{
    if (*h) {
        CloseHandle((HANDLE)*h);
        *h = NULL;
    }
}

int process_start(engine_process *p, const char *command, const char *directory, char *error, int error_size)
{
    SECURITY_ATTRIBUTES sa;
    HANDLE child_in = NULL, to_child = NULL, from_child = NULL, child_out = NULL, nul = NULL;
    STARTUPINFOA si;
    PROCESS_INFORMATION pi;
    char *line;

    memset(p, 0, sizeof(*p));
    memset(&sa, 0, sizeof(sa));
    sa.nLength = sizeof(sa);
    sa.bInheritHandle = TRUE;
    if (!CreatePipe(&child_in, &to_child, &sa, 0) || !CreatePipe(&from_child, &child_out, &sa, 0)) {
        snprintf(error, error_size, "cannot create pipes (error %lu)", (unsigned long)GetLastError());
        goto fail;
    }
    SetHandleInformation(to_child, HANDLE_FLAG_INHERIT, 0);
    SetHandleInformation(from_child, HANDLE_FLAG_INHERIT, 0);
    nul = CreateFileA("NUL", GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, &sa, OPEN_EXISTING, 0, NULL);

    memset(&si, 0, sizeof(si));
    si.cb = sizeof(si);
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = child_in;
    si.hStdOutput = child_out;
    si.hStdError = nul != INVALID_HANDLE_VALUE ? nul : child_out;
    memset(&pi, 0, sizeof(pi));
    line = _strdup(command);   /* CreateProcess may modify the command line */
    if (!line) {
        snprintf(error, error_size, "out of memory");
        goto fail;
    }
    if (!CreateProcessA(NULL, line, NULL, NULL, TRUE, CREATE_NO_WINDOW | CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP,
                        NULL, (directory && directory[0]) ? directory : NULL, &si, &pi)) {
        snprintf(error, error_size, "cannot start '%s' (Windows error %lu)", command, (unsigned long)GetLastError());
        free(line);
        goto fail;
    }
    free(line);
    p->job = CreateJobObjectA(NULL, NULL);
    if (p->job) {
        JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits;
        memset(&limits, 0, sizeof(limits));
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        SetInformationJobObject((HANDLE)p->job, JobObjectExtendedLimitInformation, &limits, sizeof(limits));
        if (!AssignProcessToJobObject((HANDLE)p->job, pi.hProcess))
            close_handle(&p->job);   /* then only the process itself is killed */
    }
    ResumeThread(pi.hThread);
    CloseHandle(pi.hThread);
    CloseHandle(child_in);
    CloseHandle(child_out);
    if (nul && nul != INVALID_HANDLE_VALUE)
        CloseHandle(nul);
    p->process = pi.hProcess;
    p->pid = pi.dwProcessId;
    p->to_child = to_child;
    p->from_child = from_child;
    p->running = 1;
    return 0;

fail:
    if (child_in) CloseHandle(child_in);
    if (to_child) CloseHandle(to_child);
    if (from_child) CloseHandle(from_child);
    if (child_out) CloseHandle(child_out);
    if (nul && nul != INVALID_HANDLE_VALUE) CloseHandle(nul);
    return -1;
}

int process_alive(engine_process *p)
{
    if (!p->running)
        return 0;
    if (WaitForSingleObject((HANDLE)p->process, 0) == WAIT_TIMEOUT)
        return 1;
    return 0;
}

int process_write_line(engine_process *p, const char *text)
{
    DWORD written;
    size_t n = strlen(text);
    if (!p->running)
        return -1;
    if (!WriteFile((HANDLE)p->to_child, text, (DWORD)n, &written, NULL) || written != n)
        return -1;
    if (!WriteFile((HANDLE)p->to_child, "\n", 1, &written, NULL) || written != 1)
        return -1;
    return 0;
}

int process_read_line(engine_process *p, char *line, int size, long long deadline_ms)
{
    for (;;) {
        if (take_line(p, line, size, p->eof || p->buffered == sizeof(p->buffer)))
            return 1;
        if (p->eof || !p->running)
            return -1;
        DWORD available = 0;
        if (!PeekNamedPipe((HANDLE)p->from_child, NULL, 0, NULL, &available, NULL)) {
            p->eof = 1;
            continue;
        }
        if (available > 0) {
            DWORD got = 0, room = (DWORD)(sizeof(p->buffer) - p->buffered);
            if (available < room)
                room = available;
            if (!ReadFile((HANDLE)p->from_child, p->buffer + p->buffered, room, &got, NULL) || got == 0)
                p->eof = 1;
            p->buffered += got;
            continue;
        }
        if (platform_now_ms() >= deadline_ms)
            return 0;
        Sleep(1);
    }
}

void process_kill(engine_process *p)
{
    if (!p->running)
        return;
    if (p->job)
        TerminateJobObject((HANDLE)p->job, 1);
    else
        TerminateProcess((HANDLE)p->process, 1);
    WaitForSingleObject((HANDLE)p->process, 2000);
    close_handle(&p->to_child);
    close_handle(&p->from_child);
    close_handle(&p->process);
    close_handle(&p->job);
    p->running = 0;
}

void process_stop(engine_process *p, int grace_ms)
{
    if (!p->running)
        return;
    close_handle(&p->to_child);  /* end of input = quit, for an engine that missed "quit" */
    WaitForSingleObject((HANDLE)p->process, (DWORD)grace_ms);
    process_kill(p);
}

#else
/* ============================================================================ POSIX ========= */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct platform_lock {
    pthread_mutex_t mutex;
};
static struct platform_lock session_lock = {PTHREAD_MUTEX_INITIALIZER};
static struct platform_lock config_lock = {PTHREAD_MUTEX_INITIALIZER};

platform_lock *platform_lock_session(void) { return &session_lock; }
platform_lock *platform_lock_config(void) { return &config_lock; }
void platform_lock_acquire(platform_lock *lock) { pthread_mutex_lock(&lock->mutex); }
int platform_lock_try(platform_lock *lock) { return pthread_mutex_trylock(&lock->mutex) == 0; }
void platform_lock_release(platform_lock *lock) { pthread_mutex_unlock(&lock->mutex); }

long long platform_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void platform_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

void platform_library_path(char *out, int size)
{
    Dl_info info;
    out[0] = '\0';
    if (dladdr(&library_anchor, &info) && info.dli_fname)
        snprintf(out, (size_t)size, "%s", info.dli_fname);
}

int process_start(engine_process *p, const char *command, const char *directory, char *error, int error_size)
{
    int in_pipe[2], out_pipe[2];
    memset(p, 0, sizeof(*p));
    size_t length = strlen(command) + 6;
    char *shell_line = malloc(length);
    if (!shell_line) {
        snprintf(error, error_size, "out of memory");
        return -1;
    }
    snprintf(shell_line, length, "exec %s", command);   /* exec: the engine itself is the child */
    if (pipe(in_pipe) != 0) {
        snprintf(error, error_size, "cannot create a pipe: %s", strerror(errno));
        free(shell_line);
        return -1;
    }
    if (pipe(out_pipe) != 0) {
        snprintf(error, error_size, "cannot create a pipe: %s", strerror(errno));
        close(in_pipe[0]);
        close(in_pipe[1]);
        free(shell_line);
        return -1;
    }
    fcntl(in_pipe[1], F_SETFD, FD_CLOEXEC);
    fcntl(out_pipe[0], F_SETFD, FD_CLOEXEC);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(error, error_size, "cannot fork: %s", strerror(errno));
        close(in_pipe[0]);
        close(in_pipe[1]);
        close(out_pipe[0]);
        close(out_pipe[1]);
        free(shell_line);
        return -1;
    }
    if (pid == 0) {
        /* the child: only async-signal-safe calls until exec */
        setpgid(0, 0);
        dup2(in_pipe[0], 0);
        dup2(out_pipe[1], 1);
        close(in_pipe[0]);
        close(out_pipe[1]);
        if (directory && directory[0] && chdir(directory) != 0)
            _exit(126);
        execl("/bin/sh", "sh", "-c", shell_line, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);   /* also from the parent, so the group exists before any kill */
    close(in_pipe[0]);
    close(out_pipe[1]);
    free(shell_line);
    p->pid = (int)pid;
    p->to_child = in_pipe[1];
    p->from_child = out_pipe[0];
    p->running = 1;
    return 0;
}

int process_alive(engine_process *p)
{
    int status;
    if (!p->running || p->pid <= 0)
        return 0;
    pid_t r = waitpid((pid_t)p->pid, &status, WNOHANG);
    if (r == 0)
        return 1;
    if (r == (pid_t)p->pid)
        p->pid = -p->pid;   /* reaped: remember the group for the final kill, never wait again */
    return 0;
}

/* write() with SIGPIPE blocked in this thread and any SIGPIPE it raised consumed. */
static int write_all(int fd, const char *data, size_t n)
{
    sigset_t pipe_set, old_set, pending;
    int was_pending, result = 0;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
    sigpending(&pending);
    was_pending = sigismember(&pending, SIGPIPE);
    while (n > 0) {
        ssize_t w = write(fd, data, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            result = -1;
            break;
        }
        data += w;
        n -= (size_t)w;
    }
    if (result != 0 && errno == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_set, NULL);
    return result;
}

int process_write_line(engine_process *p, const char *text)
{
    if (!p->running)
        return -1;
    if (write_all(p->to_child, text, strlen(text)) != 0 || write_all(p->to_child, "\n", 1) != 0)
        return -1;
    return 0;
}

int process_read_line(engine_process *p, char *line, int size, long long deadline_ms)
{
    for (;;) {
        if (take_line(p, line, size, p->eof || p->buffered == sizeof(p->buffer)))
            return 1;
        if (p->eof || !p->running)
            return -1;
        long long left = deadline_ms - platform_now_ms();
        struct pollfd fd = {p->from_child, POLLIN, 0};
        int r = poll(&fd, 1, left > 0 ? (int)(left > 1000000 ? 1000000 : left) : 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            p->eof = 1;
            continue;
        }
        if (r == 0) {
            if (left <= 0)
                return 0;
            continue;
        }
        ssize_t got = read(p->from_child, p->buffer + p->buffered, sizeof(p->buffer) - p->buffered);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            p->eof = 1;
        else
            p->buffered += (size_t)got;
    }
}

static void reap_with_deadline(engine_process *p, int wait_ms)
{
    long long deadline = platform_now_ms() + wait_ms;
    while (p->pid > 0) {
        int status;
        pid_t r = waitpid((pid_t)p->pid, &status, WNOHANG);
        if (r == (pid_t)p->pid || (r < 0 && errno == ECHILD)) {
            p->pid = -p->pid;
            break;
        }
        if (platform_now_ms() >= deadline)
            break;
        platform_sleep_ms(2);
    }
}

void process_kill(engine_process *p)
{
    if (!p->running)
        return;
    int group = p->pid > 0 ? p->pid : -p->pid;
    if (group > 0)
        kill(-group, SIGKILL);
    reap_with_deadline(p, 2000);
    close(p->to_child);
    close(p->from_child);
    p->running = 0;
    p->buffered = 0;
}

void process_stop(engine_process *p, int grace_ms)
{
    if (!p->running)
        return;
    close(p->to_child);           /* end of input = quit, for an engine that missed "quit" */
    p->to_child = open("/dev/null", O_WRONLY | O_CLOEXEC);
    reap_with_deadline(p, grace_ms);
    process_kill(p);              /* whatever the engine left behind in its group */
}
#endif
