/*
 * platform.h - the operating-system layer of the bridge: the engine child process (pipes,
 * its own process group / job object, killed as a whole), reading lines with a deadline,
 * a monotonic clock, a lock and the path of this library.  POSIX and Win32 implementations
 * live in platform.c; nothing else in the bridge includes a system header beyond the C library.
 */
#ifndef UCI_CHECKERS_CB_PLATFORM_H
#define UCI_CHECKERS_CB_PLATFORM_H

#include <stddef.h>

#define PROCESS_READ_BUFFER 65536

typedef struct {
#if defined(_WIN32)
    void *process;        /* HANDLE */
    void *job;            /* HANDLE: the job object holding the engine and its children */
    void *to_child;       /* HANDLE: the engine's stdin */
    void *from_child;     /* HANDLE: the engine's stdout */
    unsigned long pid;
#else
    int pid;              /* also the process group id */
    int to_child;
    int from_child;
#endif
    int running;
    int eof;
    size_t buffered;
    char buffer[PROCESS_READ_BUFFER];
} engine_process;

/* Start command (a shell-style command line) in directory (NULL or "" = inherit).
 * 0 ok, -1 with a message in error. */
int process_start(engine_process *p, const char *command, const char *directory, char *error, int error_size);
/* Still running?  (Reaps it when it has exited.) */
int process_alive(engine_process *p);
/* Write text + "\n".  0 ok, -1 if the engine is gone. */
int process_write_line(engine_process *p, const char *text);
/* One line without its end-of-line: 1 = a line, 0 = nothing before deadline_ms, -1 = end of output. */
int process_read_line(engine_process *p, char *line, int size, long long deadline_ms);
/* Ask nothing: kill the whole process group / job and wait for it (bounded). */
void process_kill(engine_process *p);
/* Wait up to grace_ms for the engine to exit on its own (after "quit"), then kill what is left. */
void process_stop(engine_process *p, int grace_ms);

long long platform_now_ms(void);          /* monotonic milliseconds */
void platform_sleep_ms(int ms);
/* The full path of this shared library (for the ini file beside it); "" if unknown. */
void platform_library_path(char *out, int size);

/* A process-wide lock that needs no initialisation call. */
typedef struct platform_lock platform_lock;
platform_lock *platform_lock_session(void);  /* held for a whole getmove */
platform_lock *platform_lock_config(void);   /* held briefly around the configuration */
void platform_lock_acquire(platform_lock *lock);
int platform_lock_try(platform_lock *lock);   /* 1 = acquired */
void platform_lock_release(platform_lock *lock);

#endif
