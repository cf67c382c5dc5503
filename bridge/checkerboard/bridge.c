/*
 * bridge.c - a CheckerBoard engine (getmove / enginecommand / islegal) that is a host for an
 * engine speaking uci_checkers' protocol.md over pipes.
 *
 * One engine process per loaded library: started on the first getmove, kept between moves,
 * restarted when it died (or when the command changed).  Configuration: an ini file beside the
 * library (same name, .ini: [engine] command=..., directory=...; [options] Name=value) and the
 * enginecommand "set engine <cmd>", "set directory <dir>", "set option <name> <value>",
 * "set hashsize <MB>", "set book 0|1" (the engine's OwnBook option; "get book" reads it).
 * Every wait on the engine has a deadline; playnow sends "stop".
 *
 * The game so far: CheckerBoard sends "set gamehist <FEN> <moves>" before each getmove
 * (2021 and later); without it the bridge keeps the history itself, recognising the
 * opponent's move between two calls.  Either way only the moves since the last capture or man
 * move are sent (nothing earlier can repeat), as "position fen <FEN> moves ...".
 */
#include "board.h"
#include "cb_api.h"
#include "platform.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BRIDGE_NAME "uci_checkers"
#define CB_PROTOCOL_VERSION_TEXT "2"      /* CB_PROTOCOL_VERSION */
#define CB_GAMETYPE_ENGLISH_TEXT "21"     /* CB_GAMETYPE_ENGLISH */
#define DEFAULT_COMMAND "uci-checkers"
#define DEFAULT_HASH_MB 16
#define MAX_OPTIONS 32
#define MAX_ENGINE_OPTIONS 64
#define MAX_HISTORY 400
#define LINE_SIZE 8192
#define TEXT_SIZE 1024
#define STARTUP_UCIOK_MS 60000        /* process start and Python imports */
#define STARTUP_READY_MS 600000       /* a cold numba compile cache takes minutes on a slow machine */
#define READY_MS 10000
#define STOP_GRACE_MS 3000            /* protocol.md promises bestmove within 50 ms of stop */
#define SEARCH_SLACK_MS 15000         /* beyond the time asked for, before the engine counts as hung */
#define POLL_MS 5                     /* playnow is looked at this often */
#define MAX_MOVE_TIME_MS 86400000LL   /* one day */
#define QUIT_GRACE_MS 2000

typedef struct {
    char name[64];
    char value[256];
    int applied;                      /* sent to the running engine */
    int button;                       /* a button press: sent once, never kept */
} option_setting;

static struct {
    int loaded;
    char library_dir[TEXT_SIZE];
    char ini_path[TEXT_SIZE];
    char ini_note[TEXT_SIZE];
    char command[TEXT_SIZE];
    char directory[TEXT_SIZE];
    option_setting options[MAX_OPTIONS];
    int n_options;
    int generation;                   /* bumped when command/directory change */
} config;

static struct {
    engine_process process;
    int generation;                   /* config generation the process was started with */
    char engine_name[128];
    char startup_note[TEXT_SIZE];      /* an option the engine refused when it started */
    char option_names[MAX_ENGINE_OPTIONS][64];
    char option_types[MAX_ENGINE_OPTIONS][16];
    int n_engine_options;
    int hash_default;
    /* the game so far: a FEN after the last irreversible move plus the reversible moves */
    int have_history;
    char history_fen[BOARD_FEN_SIZE];
    char history_moves[MAX_HISTORY][8];
    int n_history;
    board_position history_end;
    /* the last "set gamehist" (valid for the next getmove only) */
    int gamehist_valid;
    char gamehist_fen[BOARD_FEN_SIZE];
    char gamehist_moves[MAX_HISTORY][8];
    int n_gamehist;
    board_position gamehist_end;
} session;

static engine_process *const engine = &session.process;

/* --- small string helpers ---------------------------------------------------------------------- */

static void copy_text(char *out, size_t size, const char *text)
{
    snprintf(out, size, "%s", text);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

static int same_word(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

/* "word rest": true if text starts with word (any case) followed by a space or the end; *rest
 * then points past the spaces after it. */
static int starts_with_word(const char *text, const char *word, const char **rest)
{
    size_t n = strlen(word);
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)text[i]) != tolower((unsigned char)word[i]))
            return 0;
    if (text[n] != '\0' && !isspace((unsigned char)text[n]))
        return 0;
    text += n;
    while (isspace((unsigned char)*text))
        text++;
    *rest = text;
    return 1;
}

static void set_status(char *str, const char *text)
{
    if (str)
        snprintf(str, CB_STATUS_SIZE, "%s", text);
}

/* --- configuration ------------------------------------------------------------------------------ */

static option_setting *find_option(const char *name)
{
    for (int i = 0; i < config.n_options; i++)
        if (same_word(config.options[i].name, name))
            return &config.options[i];
    return NULL;
}

static int store_option(const char *name, const char *value, int button)
{
    option_setting *o = find_option(name);
    if (!o) {
        if (config.n_options >= MAX_OPTIONS)
            return -1;
        o = &config.options[config.n_options++];
    }
    copy_text(o->name, sizeof(o->name), name);
    copy_text(o->value, sizeof(o->value), value);
    o->applied = 0;
    o->button = button;
    return 0;
}

static void remove_option(option_setting *o)
{
    int i = (int)(o - config.options);
    memmove(&config.options[i], &config.options[i + 1], sizeof(option_setting) * (size_t)(config.n_options - i - 1));
    config.n_options--;
}

static void read_ini(void)
{
    FILE *f = fopen(config.ini_path, "r");
    char raw[TEXT_SIZE], section[64] = "";
    int line_number = 0;
    if (!f) {
        snprintf(config.ini_note, sizeof(config.ini_note), "no %s (defaults used)", config.ini_path);
        return;
    }
    snprintf(config.ini_note, sizeof(config.ini_note), "settings from %s", config.ini_path);
    while (fgets(raw, sizeof(raw), f)) {
        char *line = trim(raw);
        line_number++;
        if (!*line || *line == ';' || *line == '#')
            continue;
        if (*line == '[') {
            char *end = strchr(line, ']');
            if (end)
                *end = '\0';
            copy_text(section, sizeof(section), trim(line + 1));
            continue;
        }
        char *eq = strchr(line, '=');
        if (!eq) {
            snprintf(config.ini_note, sizeof(config.ini_note), "%s line %d: expected name = value; line ignored",
                     config.ini_path, line_number);
            continue;
        }
        *eq = '\0';
        char *key = trim(line), *value = trim(eq + 1);
        if (same_word(section, "engine") && same_word(key, "command"))
            copy_text(config.command, sizeof(config.command), value);
        else if (same_word(section, "engine") && same_word(key, "directory"))
            copy_text(config.directory, sizeof(config.directory), value);
        else if (same_word(section, "options") && *key && *value)
            store_option(key, value, 0);
        else
            snprintf(config.ini_note, sizeof(config.ini_note), "%s line %d: unknown setting '%s' ignored",
                     config.ini_path, line_number, key);
    }
    fclose(f);
}

/* Called with the config lock held. */
static void load_config(void)
{
    char path[TEXT_SIZE];
    if (config.loaded)
        return;
    config.loaded = 1;
    copy_text(config.command, sizeof(config.command), DEFAULT_COMMAND);
    platform_library_path(path, sizeof(path));
    char *slash = strrchr(path, '/');
#if defined(_WIN32)
    char *backslash = strrchr(path, '\\');
    if (!slash || (backslash && backslash > slash))
        slash = backslash;
#endif
    if (slash) {
        char *dot = strrchr(slash, '.');
        if (dot)
            *dot = '\0';
        snprintf(config.ini_path, sizeof(config.ini_path), "%s.ini", path);
        *slash = '\0';
        copy_text(config.library_dir, sizeof(config.library_dir), path);
        read_ini();
    } else {
        copy_text(config.ini_note, sizeof(config.ini_note), "library path unknown: no ini file read");
    }
}

/* --- talking to the engine ---------------------------------------------------------------------- */

static void forget_engine_state(void)
{
    session.engine_name[0] = '\0';
    session.startup_note[0] = '\0';
    session.n_engine_options = 0;
    session.hash_default = DEFAULT_HASH_MB;   /* the game history is the bridge's: it survives a restart */
}

static void stop_engine(void)
{
    if (engine->running) {
        process_write_line(engine, "quit");
        process_stop(engine, QUIT_GRACE_MS);
    }
}

static int engine_knows_option(const char *name, char *type, size_t type_size)
{
    for (int i = 0; i < session.n_engine_options; i++) {
        if (same_word(session.option_names[i], name)) {
            if (type)
                copy_text(type, type_size, session.option_types[i]);
            return 1;
        }
    }
    return 0;
}

static void note_option_line(const char *line)
{
    /* option name <Name with spaces> type <t> default <d> ... */
    const char *name = strstr(line, " name ");
    const char *type = strstr(line, " type ");
    if (!name || !type || type < name || session.n_engine_options >= MAX_ENGINE_OPTIONS)
        return;
    name += 6;
    size_t n = (size_t)(type - name);
    if (n >= sizeof(session.option_names[0]))
        n = sizeof(session.option_names[0]) - 1;
    char *slot = session.option_names[session.n_engine_options];
    memcpy(slot, name, n);
    slot[n] = '\0';
    sscanf(type + 6, "%15s", session.option_types[session.n_engine_options]);
    if (same_word(slot, "Hash")) {
        const char *def = strstr(type, " default ");
        if (def)
            session.hash_default = atoi(def + 9);
    }
    session.n_engine_options++;
}

/* Send isready and read up to readyok; the first "info string error" line (if any) goes to
 * error.  0 = readyok, -1 = the engine died or did not answer in time. */
static int wait_ready(int timeout_ms, char *error, size_t error_size)
{
    char line[LINE_SIZE];
    long long deadline = platform_now_ms() + timeout_ms;
    if (error)
        error[0] = '\0';
    if (process_write_line(engine, "isready") != 0)
        return -1;
    for (;;) {
        int r = process_read_line(engine, line, sizeof(line), deadline);
        if (r <= 0)
            return -1;
        if (strcmp(trim(line), "readyok") == 0)
            return 0;
        if (error && !error[0] && strncmp(line, "info string error:", 18) == 0)
            copy_text(error, error_size, line + 18);
    }
}

/* Send the options not yet applied; a rejected one is dropped from the configuration and its
 * error reported in note.  Called with both locks held (config briefly). */
static int apply_options(char *note, size_t note_size)
{
    char line[LINE_SIZE], error[TEXT_SIZE];
    if (note)
        note[0] = '\0';
    for (int i = 0; i < config.n_options; i++) {
        option_setting *o = &config.options[i];
        if (o->applied)
            continue;
        if (o->button)
            snprintf(line, sizeof(line), "setoption name %s", o->name);
        else
            snprintf(line, sizeof(line), "setoption name %s value %s", o->name, o->value);
        if (process_write_line(engine, line) != 0)
            return -1;
        o->applied = 1;
        if (wait_ready(READY_MS, error, sizeof(error)) != 0)
            return -1;
        if (error[0]) {
            if (note)
                snprintf(note, note_size, "option %s rejected:%s", o->name, error);
            remove_option(o);
            i--;
        } else if (o->button) {
            remove_option(o);
            i--;
        }
    }
    return 0;
}

/* Make sure an engine is running (start or restart it).  0 ok, -1 with a message. */
static int ensure_engine(char *status, char *message, size_t message_size)
{
    char line[LINE_SIZE], error[TEXT_SIZE], command[TEXT_SIZE], directory[TEXT_SIZE];
    int generation;

    platform_lock_acquire(platform_lock_config());
    load_config();
    copy_text(command, sizeof(command), config.command);
    copy_text(directory, sizeof(directory), config.directory[0] ? config.directory : config.library_dir);
    generation = config.generation;
    platform_lock_release(platform_lock_config());

    if (engine->running && session.generation == generation && process_alive(engine))
        return 0;
    if (engine->running)
        stop_engine();                         /* dead, or the command changed */
    forget_engine_state();
    set_status(status, "uci_checkers: starting the engine...");
    if (process_start(engine, command, directory, error, sizeof(error)) != 0) {
        snprintf(message, message_size, "cannot start the engine: %s", error);
        return -1;
    }
    session.generation = generation;
    long long deadline = platform_now_ms() + STARTUP_UCIOK_MS;
    if (process_write_line(engine, "uci") != 0)
        goto died;
    for (;;) {
        int r = process_read_line(engine, line, sizeof(line), deadline);
        if (r < 0)
            goto died;
        if (r == 0) {
            snprintf(message, message_size, "engine '%s' did not answer uci within %d s", command,
                     STARTUP_UCIOK_MS / 1000);
            process_kill(engine);
            return -1;
        }
        char *t = trim(line);
        if (strcmp(t, "uciok") == 0)
            break;
        if (strncmp(t, "id name ", 8) == 0)
            copy_text(session.engine_name, sizeof(session.engine_name), t + 8);
        else if (strncmp(t, "option ", 7) == 0)
            note_option_line(t);
    }
    set_status(status, "uci_checkers: engine started, loading (a first start compiles, up to minutes)...");
    /* readyok comes once the engine's kernels are compiled; only then do option round trips have short deadlines */
    if (wait_ready(STARTUP_READY_MS, NULL, 0) != 0)
        goto died;
    platform_lock_acquire(platform_lock_config());
    for (int i = 0; i < config.n_options; i++)
        config.options[i].applied = 0;
    int applied = apply_options(session.startup_note, sizeof(session.startup_note));
    platform_lock_release(platform_lock_config());
    if (applied != 0)
        goto died;
    return 0;

died:
    snprintf(message, message_size, "engine '%s' (in %s) exited or hung at start-up: check the command",
             command, directory[0] ? directory : ".");
    process_kill(engine);
    return -1;
}

/* --- game history ---------------------------------------------------------------------------- */

static void history_start(const board_position *pos)
{
    board_to_fen(pos, session.history_fen);
    session.n_history = 0;
    session.history_end = *pos;
    session.have_history = 1;
}

/* Append a move played from history_end. */
static void history_push(const board_move *move)
{
    board_position before = session.history_end;
    board_play(&session.history_end, move);
    if (board_move_is_irreversible(&before, move) || session.n_history >= MAX_HISTORY) {
        history_start(&session.history_end);
        return;
    }
    board_move_text(move, session.history_moves[session.n_history], sizeof(session.history_moves[0]));
    session.n_history++;
}

/* Bring the history up to the position CheckerBoard sends now. */
static void history_sync(const board_position *now, int reset)
{
    if (session.gamehist_valid && board_same(&session.gamehist_end, now)) {
        copy_text(session.history_fen, sizeof(session.history_fen), session.gamehist_fen);
        memcpy(session.history_moves, session.gamehist_moves, sizeof(session.history_moves));
        session.n_history = session.n_gamehist;
        session.history_end = *now;
        session.have_history = 1;
        return;
    }
    if (reset || !session.have_history) {
        history_start(now);
        return;
    }
    if (board_same(&session.history_end, now))
        return;
    board_move moves[BOARD_MAX_MOVES];
    int n = board_legal_moves(&session.history_end, moves, BOARD_MAX_MOVES);
    for (int i = 0; i < n; i++) {
        board_position after = session.history_end;
        board_play(&after, &moves[i]);
        if (board_same(&after, now)) {
            history_push(&moves[i]);           /* the opponent's move */
            return;
        }
    }
    history_start(now);                        /* a jump in the game: start from here */
}

static int parse_gamehist(const char *text, char *reply)
{
    char buffer[LINE_SIZE], error[TEXT_SIZE];
    copy_text(buffer, sizeof(buffer), text);
    char *fen = trim(buffer);
    char *rest = fen;
    while (*rest && !isspace((unsigned char)*rest))
        rest++;
    if (*rest)
        *rest++ = '\0';
    session.gamehist_valid = 0;
    if (board_from_fen(fen, &session.gamehist_end, error, sizeof(error)) != 0) {
        snprintf(reply, CB_REPLY_SIZE, "set gamehist: %s", error);
        return 0;
    }
    copy_text(session.gamehist_fen, sizeof(session.gamehist_fen), fen);
    session.n_gamehist = 0;
    for (char *word = strtok(rest, " \t"); word; word = strtok(NULL, " \t")) {
        int squares[BOARD_MAX_PATH], n_squares = board_parse_squares(word, squares);
        board_move moves[BOARD_MAX_MOVES];
        int n = board_legal_moves(&session.gamehist_end, moves, BOARD_MAX_MOVES);
        const board_move *m = n_squares > 0 ? board_match_move(&session.gamehist_end, moves, n, squares, n_squares) : NULL;
        if (!m) {
            snprintf(reply, CB_REPLY_SIZE, "set gamehist: illegal move '%s'", word);
            return 0;
        }
        board_position before = session.gamehist_end;
        board_play(&session.gamehist_end, m);
        if (board_move_is_irreversible(&before, m) || session.n_gamehist >= MAX_HISTORY) {
            board_to_fen(&session.gamehist_end, session.gamehist_fen);
            session.n_gamehist = 0;
        } else {
            board_move_text(m, session.gamehist_moves[session.n_gamehist++], sizeof(session.gamehist_moves[0]));
        }
    }
    session.gamehist_valid = 1;
    snprintf(reply, CB_REPLY_SIZE, "ok");
    return 1;
}

/* --- the search ---------------------------------------------------------------------------- */

typedef struct {
    int depth, seldepth, have_score, mate, cp;
    long long nodes, nps, time_ms;
    char pv[256];
    int draw_claimed;
    char error[TEXT_SIZE];
} search_report;

static void parse_info(const char *line, search_report *report)
{
    char copy[LINE_SIZE];
    copy_text(copy, sizeof(copy), line);
    int multipv = 1, have_score = 0, mate = 0, cp = 0, depth = -1, seldepth = 0;
    long long nodes = -1, nps = -1, time_ms = -1;
    char pv[256] = "";
    char *save = NULL;
    char *word = strtok_r(copy, " \t", &save);
    while ((word = strtok_r(NULL, " \t", &save)) != NULL) {
        if (strcmp(word, "depth") == 0 && (word = strtok_r(NULL, " \t", &save)))
            depth = atoi(word);
        else if (strcmp(word, "seldepth") == 0 && (word = strtok_r(NULL, " \t", &save)))
            seldepth = atoi(word);
        else if (strcmp(word, "multipv") == 0 && (word = strtok_r(NULL, " \t", &save)))
            multipv = atoi(word);
        else if (strcmp(word, "nodes") == 0 && (word = strtok_r(NULL, " \t", &save)))
            nodes = atoll(word);
        else if (strcmp(word, "nps") == 0 && (word = strtok_r(NULL, " \t", &save)))
            nps = atoll(word);
        else if (strcmp(word, "time") == 0 && (word = strtok_r(NULL, " \t", &save)))
            time_ms = atoll(word);
        else if (strcmp(word, "score") == 0 && (word = strtok_r(NULL, " \t", &save))) {
            char *value = strtok_r(NULL, " \t", &save);
            if (!value)
                break;
            have_score = 1;
            mate = strcmp(word, "mate") == 0;
            cp = atoi(value);
        } else if (strcmp(word, "pv") == 0) {
            while ((word = strtok_r(NULL, " \t", &save)) != NULL) {
                size_t used = strlen(pv);
                if (used + strlen(word) + 2 >= sizeof(pv))
                    break;
                snprintf(pv + used, sizeof(pv) - used, "%s%s", used ? " " : "", word);
            }
            break;
        } else if (strcmp(word, "string") == 0 || strcmp(word, "currmove") == 0) {
            return;
        }
    }
    if (multipv != 1 || depth < 0)
        return;
    report->depth = depth;
    report->seldepth = seldepth;
    if (have_score) {
        report->have_score = 1;
        report->mate = mate;
        report->cp = cp;
    }
    if (nodes >= 0)
        report->nodes = nodes;
    if (nps >= 0)
        report->nps = nps;
    if (time_ms >= 0)
        report->time_ms = time_ms;
    if (pv[0])
        copy_text(report->pv, sizeof(report->pv), pv);
}

static void format_status(const search_report *r, const char *prefix, char *str)
{
    char score[48] = "";
    if (r->have_score) {
        if (r->mate)
            snprintf(score, sizeof(score), "%s in %d", r->cp > 0 ? "win" : "loss", r->cp > 0 ? r->cp : -r->cp);
        else
            snprintf(score, sizeof(score), "%+.2f", r->cp / 100.0);
    }
    if (!str)
        return;
    if (r->depth <= 0 && !r->have_score) {     /* the engine said nothing about its search */
        snprintf(str, CB_STATUS_SIZE, "%s", prefix ? prefix : "");
        return;
    }
    snprintf(str, CB_STATUS_SIZE, "%s%sdepth %d/%d  eval %s  time %.2fs  nodes %lld  %lld kN/s  pv %s",
             prefix ? prefix : "", prefix ? "  " : "", r->depth, r->seldepth, score, r->time_ms / 1000.0,
             r->nodes, r->nps / 1000, r->pv);
}

/* The go command for CheckerBoard's time information. */
static void go_command(double maxtime, int info, int moreinfo, char *out, size_t size, long long *limit_ms)
{
    int mode = (info >> CB_INCR_TIME_SHIFT) & CB_INCR_TIME_MASK;
    if (mode != 0) {
        static const int unit_ms[4] = {0, 1, 10, 100};
        long long left = (long long)((unsigned)moreinfo >> 16 & 0xffffu) * unit_ms[mode];
        long long increment = (long long)((unsigned)moreinfo & 0xffffu) * unit_ms[mode];
        snprintf(out, size, "go btime %lld wtime %lld binc %lld winc %lld", left, left, increment, increment);
        *limit_ms = left;
        return;
    }
    /* analysis levels send huge times: a day is "infinite" enough and keeps every value in range */
    long long ms = maxtime > 0 && maxtime < MAX_MOVE_TIME_MS / 1000.0 ? (long long)(maxtime * 1000.0 + 0.5)
                                                                     : (maxtime > 0 ? MAX_MOVE_TIME_MS : 1);
    if (ms < 1)
        ms = 1;
    if (info & CB_EXACT_TIME) {
        snprintf(out, size, "go movetime %lld", ms);
        *limit_ms = ms;
    } else {
        /* maxtime is the average: a two-move clock gives the engine's time manager an optimum of
         * maxtime and a hard limit of 1.6 x maxtime (protocol.md section 6) */
        snprintf(out, size, "go btime %lld wtime %lld movestogo 2", 2 * ms, 2 * ms);
        *limit_ms = 2 * ms;
    }
}

enum search_outcome { SEARCH_MOVE, SEARCH_DIED, SEARCH_HUNG, SEARCH_NO_MOVE };

/* Send the game and go, follow the info lines into str, stop on playnow, read bestmove. */
static enum search_outcome run_search(const char *go, long long limit_ms, char *str, volatile int *playnow,
                                      search_report *report, char *best, size_t best_size, int *got_output)
{
    char line[LINE_SIZE];
    int stopped = 0;
    long long deadline = platform_now_ms() + limit_ms + SEARCH_SLACK_MS;
    *got_output = 0;
    if (process_write_line(engine, go) != 0)
        return SEARCH_DIED;
    for (;;) {
        if (playnow && *playnow && !stopped) {
            process_write_line(engine, "stop");
            stopped = 1;
            deadline = platform_now_ms() + STOP_GRACE_MS;
        }
        long long now = platform_now_ms();
        if (now >= deadline) {
            if (stopped)
                return SEARCH_HUNG;
            process_write_line(engine, "stop");
            stopped = 1;
            deadline = now + STOP_GRACE_MS;
        }
        int r = process_read_line(engine, line, sizeof(line), now + POLL_MS);
        if (r < 0)
            return SEARCH_DIED;
        if (r == 0)
            continue;
        *got_output = 1;
        char *t = trim(line);
        if (strncmp(t, "bestmove", 8) == 0 && (t[8] == ' ' || t[8] == '\0')) {
            char move[64] = "";
            sscanf(t + 8, "%63s", move);
            copy_text(best, best_size, move);
            return strcmp(move, "(none)") == 0 || !move[0] ? SEARCH_NO_MOVE : SEARCH_MOVE;
        }
        if (strncmp(t, "info string ", 12) == 0) {
            const char *text = t + 12;
            if (strncmp(text, "error:", 6) == 0 && !report->error[0])
                copy_text(report->error, sizeof(report->error), text);
            if (strncmp(text, "error: go", 9) == 0)
                return SEARCH_NO_MOVE;          /* a refused go gets no bestmove */
            if (strncmp(text, "game already over: draw", 23) == 0)
                report->draw_claimed = 1;
            continue;
        }
        if (strncmp(t, "info ", 5) == 0) {
            parse_info(t, report);
            if (report->depth > 0)
                format_status(report, session.engine_name[0] ? session.engine_name : BRIDGE_NAME, str);
        }
    }
}

/* Drop anything the engine wrote that nobody read (nothing should be there). */
static void drain_output(void)
{
    char line[LINE_SIZE];
    while (process_read_line(engine, line, sizeof(line), platform_now_ms()) == 1)
        ;
}

static int send_position(void)
{
    static char line[BOARD_FEN_SIZE + MAX_HISTORY * 8 + 64];
    snprintf(line, sizeof(line), "position fen %s", session.history_fen);
    if (session.n_history > 0) {
        strcat(line, " moves");
        for (int i = 0; i < session.n_history; i++) {
            strcat(line, " ");
            strcat(line, session.history_moves[i]);
        }
    }
    return process_write_line(engine, line);
}

CB_EXPORT int CB_CALL getmove(int board[8][8], int color, double maxtime, char str[CB_STATUS_SIZE],
                              int *playnow, int info, int moreinfo, struct CBmove *move)
{
    char message[TEXT_SIZE], go[128], best[64], note[TEXT_SIZE];
    board_position now;
    board_move moves[BOARD_MAX_MOVES];
    int result = CB_UNKNOWN;

    if (move)
        memset(move, 0, sizeof(*move));
    if (!board) {
        set_status(str, "uci_checkers: getmove without a board");
        return CB_UNKNOWN;
    }
    if (board_from_cb((const int(*)[8])board, color, &now, message, sizeof(message)) != 0) {
        char text[TEXT_SIZE + 32];
        snprintf(text, sizeof(text), "uci_checkers: bad position: %s", message);
        set_status(str, text);
        return CB_UNKNOWN;
    }
    int n_moves = board_legal_moves(&now, moves, BOARD_MAX_MOVES);
    if (n_moves == 0) {
        set_status(str, now.turn == CB_BLACK ? "uci_checkers: Black has no legal move: White wins"
                                             : "uci_checkers: White has no legal move: Black wins");
        return CB_LOSS;
    }

    platform_lock_acquire(platform_lock_session());
    for (int attempt = 0; attempt < 2; attempt++) {
        search_report report;
        int got_output = 0;
        long long limit_ms = 0;
        memset(&report, 0, sizeof(report));
        if (ensure_engine(str, message, sizeof(message)) != 0) {
            char text[TEXT_SIZE + 32];
            snprintf(text, sizeof(text), "uci_checkers: %s", message);
            set_status(str, text);
            break;
        }
        drain_output();
        if (info & CB_RESET_MOVES)
            process_write_line(engine, "ucinewgame");
        history_sync(&now, (info & CB_RESET_MOVES) != 0);
        platform_lock_acquire(platform_lock_config());
        int applied = apply_options(note, sizeof(note));
        platform_lock_release(platform_lock_config());
        if (applied != 0 || send_position() != 0) {
            process_kill(engine);
            set_status(str, "uci_checkers: the engine died before the search (it restarts on the next move)");
            continue;                             /* once more on a fresh one */
        }
        go_command(maxtime, info, moreinfo, go, sizeof(go), &limit_ms);
        enum search_outcome outcome = run_search(go, limit_ms, str, (volatile int *)playnow, &report, best,
                                                 sizeof(best), &got_output);
        if (outcome == SEARCH_DIED) {
            process_kill(engine);
            if (!got_output && attempt == 0)
                continue;                         /* died before answering: retry on a fresh engine */
            set_status(str, "uci_checkers: the engine died during the search (it restarts on the next move)");
            break;
        }
        if (outcome == SEARCH_HUNG) {
            process_kill(engine);
            set_status(str, "uci_checkers: the engine did not answer stop in time: killed (it restarts on the next move)");
            break;
        }
        if (outcome == SEARCH_NO_MOVE) {
            char text[TEXT_SIZE + 64];
            snprintf(text, sizeof(text), "uci_checkers: the engine found no move%s%s", report.error[0] ? ": " : "",
                     report.error);
            set_status(str, text);
            break;
        }
        int squares[BOARD_MAX_PATH], n_squares = board_parse_squares(best, squares);
        const board_move *chosen = n_squares > 0 ? board_match_move(&now, moves, n_moves, squares, n_squares) : NULL;
        if (!chosen) {
            char text[TEXT_SIZE + 128];
            snprintf(text, sizeof(text), "uci_checkers: the engine played '%s', not a legal move here%s%s", best,
                     report.error[0] ? ": " : "", report.error);
            set_status(str, text);
            break;
        }
        if (move && board_fill_cbmove(&now, chosen, move) != 0) {
            set_status(str, "uci_checkers: the engine's move is too long for CheckerBoard's move record");
            break;
        }
        board_position after = now;
        board_play(&after, chosen);
        board_to_cb(&after, board);
        history_push(chosen);
        char text_move[64], prefix[96];
        board_move_text(chosen, text_move, sizeof(text_move));
        snprintf(prefix, sizeof(prefix), "%s plays %s", session.engine_name[0] ? session.engine_name : BRIDGE_NAME,
                 text_move);
        format_status(&report, prefix, str);
        if (!note[0] && session.startup_note[0])
            copy_text(note, sizeof(note), session.startup_note);
        session.startup_note[0] = '\0';
        if (note[0] && str) {
            size_t used = strlen(str);
            snprintf(str + used, CB_STATUS_SIZE - used, "  (%s)", note);
        }
        if (report.draw_claimed)
            result = CB_DRAW;
        else if (report.have_score && report.mate)
            result = report.cp > 0 ? CB_WIN : CB_LOSS;
        else
            result = CB_UNKNOWN;
        break;
    }
    session.gamehist_valid = 0;
    platform_lock_release(platform_lock_session());
    return result;
}

/* --- enginecommand --------------------------------------------------------------------------- */

static int reply_text(char *reply, int handled, const char *format, const char *text)
{
    if (reply)
        snprintf(reply, CB_REPLY_SIZE, format, text);
    return handled;
}

/* "set option <name> <value>": the value is the last word, unless the whole rest is a button. */
static int command_set_option(char *rest, char *reply)
{
    char type[16] = "";
    char *name = trim(rest), *value = "";
    int known_whole = engine_knows_option(name, type, sizeof(type));
    int button = known_whole && same_word(type, "button");
    if (!button) {
        char *space = strrchr(name, ' ');
        if (!space)
            return reply_text(reply, 0, "set option needs: set option <name> <value>%s", "");
        *space = '\0';
        value = trim(space + 1);
        name = trim(name);
    }
    if (session.n_engine_options > 0 && !engine_knows_option(name, type, sizeof(type)))
        return reply_text(reply, 0, "the engine has no option '%s'", name);
    platform_lock_acquire(platform_lock_config());
    int stored = store_option(name, value, button);
    platform_lock_release(platform_lock_config());
    if (stored != 0)
        return reply_text(reply, 0, "too many options set%s", "");
    /* apply now when no search is running, else before the next one */
    if (platform_lock_try(platform_lock_session())) {
        char note[TEXT_SIZE] = "";
        int live = engine->running && process_alive(engine);
        if (live) {
            platform_lock_acquire(platform_lock_config());
            int applied = apply_options(note, sizeof(note));
            platform_lock_release(platform_lock_config());
            if (applied != 0)
                process_kill(engine);
        }
        platform_lock_release(platform_lock_session());
        if (note[0])
            return reply_text(reply, 0, "%s", note);
        if (live) {
            snprintf(reply, CB_REPLY_SIZE, "%s = %s", name, button ? "pressed" : value);
            return 1;
        }
    }
    snprintf(reply, CB_REPLY_SIZE, "%s = %s (sent to the engine before its next move)", name, button ? "pressed" : value);
    return 1;
}

static int command_about(char *reply)
{
    platform_lock_acquire(platform_lock_config());
    load_config();
    snprintf(reply, CB_REPLY_SIZE,
             "uci_checkers for CheckerBoard\n"
             "English checkers engine (Python, numba) reached through a bridge that speaks its\n"
             "text protocol (protocol.md) to the engine process.\n\n"
             "engine command: %s\nworking directory: %s\nengine: %s\n%s",
             config.command, config.directory[0] ? config.directory : config.library_dir,
             session.engine_name[0] ? session.engine_name : "not started yet (it starts on the first move)",
             config.ini_note);
    platform_lock_release(platform_lock_config());
    return 1;
}

static int command_help_file(char *reply)
{
    char path[TEXT_SIZE + 8];
    platform_lock_acquire(platform_lock_config());
    load_config();
    snprintf(path, sizeof(path), "%s", config.ini_path);
    platform_lock_release(platform_lock_config());
    size_t n = strlen(path);
    if (n > 4) {
        copy_text(path + n - 4, 8, ".htm");
        FILE *f = fopen(path, "r");
        if (f) {
            fclose(f);
            const char *base = strrchr(path, '/');
#if defined(_WIN32)
            const char *back = strrchr(path, '\\');
            if (!base || (back && back > base))
                base = back;
#endif
            return reply_text(reply, 1, "%s", base ? base + 1 : path);
        }
    }
    return reply_text(reply, 0, "%s", "");
}

CB_EXPORT int CB_CALL enginecommand(char command[CB_COMMAND_SIZE], char reply[CB_REPLY_SIZE])
{
    char buffer[LINE_SIZE];
    const char *rest;
    if (!reply)
        return 0;
    reply[0] = '\0';
    if (!command)
        return reply_text(reply, 0, "%s", "?");
    copy_text(buffer, sizeof(buffer), command);
    char *cmd = trim(buffer);

    if (same_word(cmd, "name"))
        return reply_text(reply, 1, "%s", BRIDGE_NAME);
    if (same_word(cmd, "about"))
        return command_about(reply);
    if (same_word(cmd, "help"))
        return command_help_file(reply);
    if (starts_with_word(cmd, "get", &rest)) {
        if (same_word(rest, "protocolversion"))
            return reply_text(reply, 1, "%s", CB_PROTOCOL_VERSION_TEXT);
        if (same_word(rest, "gametype"))
            return reply_text(reply, 1, "%s", CB_GAMETYPE_ENGLISH_TEXT);
        if (same_word(rest, "hashsize")) {
            platform_lock_acquire(platform_lock_config());
            load_config();
            option_setting *o = find_option("Hash");
            if (o)
                copy_text(reply, CB_REPLY_SIZE, o->value);
            else
                snprintf(reply, CB_REPLY_SIZE, "%d", session.hash_default ? session.hash_default : DEFAULT_HASH_MB);
            platform_lock_release(platform_lock_config());
            return 1;
        }
        if (same_word(rest, "book")) {
            /* the engine's own book (OwnBook, on by default): 1 on, 0 off */
            platform_lock_acquire(platform_lock_config());
            load_config();
            option_setting *o = find_option("OwnBook");
            int on = !o || !same_word(o->value, "false");
            platform_lock_release(platform_lock_config());
            return reply_text(reply, 1, "%s", on ? "1" : "0");
        }
        if (same_word(rest, "engine") || same_word(rest, "directory")) {
            platform_lock_acquire(platform_lock_config());
            load_config();
            copy_text(reply, CB_REPLY_SIZE, same_word(rest, "engine") ? config.command : config.directory);
            platform_lock_release(platform_lock_config());
            return 1;
        }
        const char *name;
        if (starts_with_word(rest, "option", &name) && *name) {
            platform_lock_acquire(platform_lock_config());
            load_config();
            option_setting *o = find_option(name);
            int found = o != NULL;
            copy_text(reply, CB_REPLY_SIZE, o ? o->value : "default");
            platform_lock_release(platform_lock_config());
            return found || engine_knows_option(name, NULL, 0);
        }
        return reply_text(reply, 0, "%s", "?");
    }
    if (starts_with_word(cmd, "set", &rest)) {
        const char *value;
        if (starts_with_word(rest, "gamehist", &value)) {
            platform_lock_acquire(platform_lock_session());
            int ok = parse_gamehist(value, reply);
            platform_lock_release(platform_lock_session());
            return ok;
        }
        if (starts_with_word(rest, "engine", &value) || starts_with_word(rest, "directory", &value)) {
            int is_engine = starts_with_word(rest, "engine", &value);
            if (is_engine && !*value)
                return reply_text(reply, 0, "%s", "set engine needs a command line");
            platform_lock_acquire(platform_lock_config());
            load_config();
            copy_text(is_engine ? config.command : config.directory, sizeof(config.command), value);
            config.generation++;
            platform_lock_release(platform_lock_config());
            snprintf(reply, CB_REPLY_SIZE, "%s set to '%s' (used from the next move on)",
                     is_engine ? "engine" : "directory", value);
            return 1;
        }
        if (starts_with_word(rest, "hashsize", &value)) {
            char *end;
            long mb = strtol(value, &end, 10);
            if (!*value || *end || mb < 1 || mb > 1048576)
                return reply_text(reply, 0, "set hashsize needs a size in MB, not '%s'", value);
            char option[64];
            snprintf(option, sizeof(option), "Hash %ld", mb);
            platform_lock_acquire(platform_lock_config());
            load_config();
            platform_lock_release(platform_lock_config());
            return command_set_option(option, reply);
        }
        if (starts_with_word(rest, "option", &value)) {
            char option[LINE_SIZE];
            copy_text(option, sizeof(option), value);
            platform_lock_acquire(platform_lock_config());
            load_config();
            platform_lock_release(platform_lock_config());
            return command_set_option(option, reply);
        }
        if (starts_with_word(rest, "book", &value)) {
            /* CheckerBoard's book modes: 0 off; 1-3 (all / good / best moves) all mean the engine's book on */
            char *end;
            long mode = strtol(value, &end, 10);
            if (!*value || *end || mode < 0 || mode > 3)
                return reply_text(reply, 0, "set book needs 0 (off) or 1-3 (on), not '%s'", value);
            char option[32];
            snprintf(option, sizeof(option), "OwnBook %s", mode ? "true" : "false");
            platform_lock_acquire(platform_lock_config());
            load_config();
            platform_lock_release(platform_lock_config());
            return command_set_option(option, reply);
        }
        return reply_text(reply, 0, "%s", "?");
    }
    return reply_text(reply, 0, "%s", "?");
}

/* --- islegal --------------------------------------------------------------------------------- */

CB_EXPORT int CB_CALL islegal(int board[8][8], int color, int from, int to, struct CBmove *move)
{
    board_position pos;
    board_move moves[BOARD_MAX_MOVES];
    char error[TEXT_SIZE];
    if (!board || board_from_cb((const int(*)[8])board, color, &pos, error, sizeof(error)) != 0)
        return 0;
    int n = board_legal_moves(&pos, moves, BOARD_MAX_MOVES);
    int squares[2] = {from, to};
    const board_move *m = board_match_move(&pos, moves, n, squares, 2);
    if (!m)
        return 0;
    if (move)
        board_fill_cbmove(&pos, m, move);
    return 1;
}

/* --- helpers for tests and tools (not part of CheckerBoard's API) ---------------------------- */

CB_EXPORT int CB_CALL cbbridge_board_to_fen(int board[8][8], int color, char *fen, int size)
{
    board_position pos;
    char error[TEXT_SIZE], text[BOARD_FEN_SIZE];
    if (board_from_cb((const int(*)[8])board, color, &pos, error, sizeof(error)) != 0) {
        snprintf(fen, (size_t)size, "error: %s", error);
        return -1;
    }
    board_to_fen(&pos, text);
    snprintf(fen, (size_t)size, "%s", text);
    return 0;
}

CB_EXPORT int CB_CALL cbbridge_fen_to_board(const char *fen, int board[8][8], int *color)
{
    board_position pos;
    char error[TEXT_SIZE];
    if (board_from_fen(fen, &pos, error, sizeof(error)) != 0)
        return -1;
    board_to_cb(&pos, board);
    *color = pos.turn;
    return 0;
}

/* Every legal move of a FEN as move text, space-separated; the count, or -1 for a bad FEN. */
CB_EXPORT int CB_CALL cbbridge_legal_moves(const char *fen, char *out, int size)
{
    board_position pos;
    board_move moves[BOARD_MAX_MOVES];
    char error[TEXT_SIZE], text[64];
    if (board_from_fen(fen, &pos, error, sizeof(error)) != 0)
        return -1;
    int n = board_legal_moves(&pos, moves, BOARD_MAX_MOVES);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        board_move_text(&moves[i], text, sizeof(text));
        size_t used = strlen(out);
        snprintf(out + used, (size_t)size - used, "%s%s", i ? " " : "", text);
    }
    return n;
}

/* The CBmove getmove would fill for a legal move (text) of a FEN: 0, or -1 if not legal. */
CB_EXPORT int CB_CALL cbbridge_fill_move(const char *fen, const char *text, struct CBmove *move)
{
    board_position pos;
    board_move moves[BOARD_MAX_MOVES];
    char error[TEXT_SIZE];
    int squares[BOARD_MAX_PATH];
    if (board_from_fen(fen, &pos, error, sizeof(error)) != 0)
        return -1;
    int n_squares = board_parse_squares(text, squares);
    int n = board_legal_moves(&pos, moves, BOARD_MAX_MOVES);
    const board_move *m = n_squares > 0 ? board_match_move(&pos, moves, n, squares, n_squares) : NULL;
    if (!m)
        return -1;
    return board_fill_cbmove(&pos, m, move);
}

#if !defined(_WIN32)
/* A host that unloads the library (or exits) takes the engine with it.  On Windows the job
 * object does this: closing its last handle kills the engine. */
__attribute__((destructor)) static void bridge_unload(void)
{
    if (engine->running)
        stop_engine();
}
#endif
