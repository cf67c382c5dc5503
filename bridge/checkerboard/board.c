/*
 * board.c - English checkers for the bridge (see board.h for why the bridge has its own).
 */
#include "board.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void board_square_coords(int square, int *x, int *y)
{
    int index = square - 1;
    *y = index / 4;
    *x = 2 * (3 - index % 4) + (*y % 2);
}

int board_coords_square(int x, int y)
{
    if (x < 0 || x > 7 || y < 0 || y > 7 || (x + y) % 2 != 0)
        return 0;
    return 4 * y + (7 - x) / 2 + 1;
}

static int is_piece_value(int v)
{
    return v == (CB_BLACK | CB_MAN) || v == (CB_BLACK | CB_KING) || v == (CB_WHITE | CB_MAN) ||
           v == (CB_WHITE | CB_KING);
}

int board_from_cb(const int cb[8][8], int color, board_position *pos, char *error, int error_size)
{
    memset(pos, 0, sizeof(*pos));
    if (color != CB_BLACK && color != CB_WHITE) {
        snprintf(error, error_size, "side to move %d is neither CB_BLACK (2) nor CB_WHITE (1)", color);
        return -1;
    }
    pos->turn = color;
    for (int x = 0; x < 8; x++) {
        for (int y = 0; y < 8; y++) {
            int v = cb[x][y];
            if (v == CB_FREE)
                continue;
            if (!is_piece_value(v)) {
                snprintf(error, error_size, "board[%d][%d] holds %d, which is no piece", x, y, v);
                return -1;
            }
            int square = board_coords_square(x, y);
            if (square == 0) {
                snprintf(error, error_size, "board[%d][%d] is a light square but holds a piece", x, y);
                return -1;
            }
            pos->piece[square] = v;
        }
    }
    return 0;
}

void board_to_cb(const board_position *pos, int cb[8][8])
{
    memset(cb, 0, sizeof(int) * 64);
    for (int square = 1; square <= BOARD_SQUARES; square++) {
        int x, y;
        board_square_coords(square, &x, &y);
        cb[x][y] = pos->piece[square];
    }
}

static void append_list(char *out, size_t size, const board_position *pos, int colour)
{
    int first = 1;
    for (int square = 1; square <= BOARD_SQUARES; square++) {
        int v = pos->piece[square];
        if (!(v & colour))
            continue;
        size_t used = strlen(out);
        snprintf(out + used, size - used, "%s%s%d", first ? "" : ",", (v & CB_KING) ? "K" : "", square);
        first = 0;
    }
}

void board_to_fen(const board_position *pos, char fen[BOARD_FEN_SIZE])
{
    snprintf(fen, BOARD_FEN_SIZE, "%s:W", pos->turn == CB_BLACK ? "B" : "W");
    append_list(fen, BOARD_FEN_SIZE, pos, CB_WHITE);
    strncat(fen, ":B", BOARD_FEN_SIZE - strlen(fen) - 1);
    append_list(fen, BOARD_FEN_SIZE, pos, CB_BLACK);
}

static const char *skip_spaces(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

static int read_number(const char **s)
{
    int value = 0, digits = 0;
    while (isdigit((unsigned char)**s) && digits < 4) {
        value = value * 10 + (**s - '0');
        (*s)++;
        digits++;
    }
    return digits ? value : -1;
}

int board_from_fen(const char *fen, board_position *pos, char *error, int error_size)
{
    const char *s = skip_spaces(fen);
    memset(pos, 0, sizeof(*pos));
    char side = (char)toupper((unsigned char)*s);
    if (side != 'B' && side != 'W') {
        snprintf(error, error_size, "FEN must start with the side to move, B or W");
        return -1;
    }
    pos->turn = side == 'B' ? CB_BLACK : CB_WHITE;
    s = skip_spaces(s + 1);
    while (*s == ':') {
        s = skip_spaces(s + 1);
        char list = (char)toupper((unsigned char)*s);
        if (list != 'B' && list != 'W') {
            snprintf(error, error_size, "a FEN piece list must start with B or W");
            return -1;
        }
        int colour = list == 'B' ? CB_BLACK : CB_WHITE;
        s = skip_spaces(s + 1);
        while (*s && *s != ':' && *s != '.') {
            int kind = CB_MAN;
            if (*s == 'K' || *s == 'k') {
                kind = CB_KING;
                s++;
            }
            int low = read_number(&s), high = low;
            if (*s == '-') {
                s++;
                if (*s == 'K' || *s == 'k')
                    s++;
                high = read_number(&s);
            }
            if (low < 1 || high < low || high > BOARD_SQUARES) {
                snprintf(error, error_size, "bad square in FEN near '%.12s'", s);
                return -1;
            }
            for (int square = low; square <= high; square++) {
                if (pos->piece[square]) {
                    snprintf(error, error_size, "square %d appears twice in the FEN", square);
                    return -1;
                }
                pos->piece[square] = colour | kind;
            }
            s = skip_spaces(s);
            if (*s == ',')
                s = skip_spaces(s + 1);
            else if (*s && *s != ':' && *s != '.') {
                snprintf(error, error_size, "unexpected '%c' in FEN", *s);
                return -1;
            }
        }
    }
    if (*s == '.')
        s++;
    s = skip_spaces(s);
    if (*s) {
        snprintf(error, error_size, "unexpected text after the FEN: '%.12s'", s);
        return -1;
    }
    return 0;
}

/* --- move generation ------------------------------------------------------------------------- */

typedef struct {
    board_move *moves;
    int n;
    int max;
} move_sink;

static void sink_add(move_sink *sink, const board_move *move)
{
    if (sink->n < sink->max)
        sink->moves[sink->n++] = *move;
}

static int forward_dy(int colour) { return colour == CB_BLACK ? 1 : -1; }
static int crown_row(int colour) { return colour == CB_BLACK ? 7 : 0; }

/* Extend the capture chain in cur (the piece stands on its last square) in every way. */
static void capture_chain(const board_position *pos, int colour, int king, board_move *cur,
                          int taken[BOARD_SQUARES + 1], move_sink *sink)
{
    int at = cur->squares[cur->n_squares - 1], x, y, extended = 0;
    board_square_coords(at, &x, &y);
    for (int dy = -1; dy <= 1; dy += 2) {
        if (!king && dy != forward_dy(colour))
            continue;
        for (int dx = -1; dx <= 1; dx += 2) {
            int over = board_coords_square(x + dx, y + dy);
            int land = board_coords_square(x + 2 * dx, y + 2 * dy);
            if (!over || !land || taken[over])
                continue;
            int victim = pos->piece[over];
            if (!victim || (victim & colour))
                continue;
            /* the start square is empty once the piece has left it (a king may loop back) */
            if (pos->piece[land] && land != cur->squares[0])
                continue;
            if (cur->n_squares >= BOARD_MAX_PATH)
                continue;
            extended = 1;
            cur->squares[cur->n_squares++] = land;
            cur->captured[cur->n_captured++] = over;
            taken[over] = 1;
            if (!king && y + 2 * dy == crown_row(colour))
                sink_add(sink, cur);          /* crowning ends the move */
            else
                capture_chain(pos, colour, king, cur, taken, sink);
            taken[over] = 0;
            cur->n_squares--;
            cur->n_captured--;
        }
    }
    if (!extended && cur->n_captured > 0)
        sink_add(sink, cur);
}

int board_legal_moves(const board_position *pos, board_move *moves, int max)
{
    move_sink sink = {moves, 0, max};
    int colour = pos->turn, taken[BOARD_SQUARES + 1];
    memset(taken, 0, sizeof(taken));
    for (int square = 1; square <= BOARD_SQUARES; square++) {
        int v = pos->piece[square];
        if (!(v & colour))
            continue;
        board_move cur;
        memset(&cur, 0, sizeof(cur));
        cur.squares[0] = square;
        cur.n_squares = 1;
        capture_chain(pos, colour, (v & CB_KING) != 0, &cur, taken, &sink);
    }
    if (sink.n > 0)
        return sink.n;
    for (int square = 1; square <= BOARD_SQUARES; square++) {
        int v = pos->piece[square], x, y;
        if (!(v & colour))
            continue;
        board_square_coords(square, &x, &y);
        for (int dy = -1; dy <= 1; dy += 2) {
            if (!(v & CB_KING) && dy != forward_dy(colour))
                continue;
            for (int dx = -1; dx <= 1; dx += 2) {
                int to = board_coords_square(x + dx, y + dy);
                if (!to || pos->piece[to])
                    continue;
                board_move m;
                memset(&m, 0, sizeof(m));
                m.n_squares = 2;
                m.squares[0] = square;
                m.squares[1] = to;
                sink_add(&sink, &m);
            }
        }
    }
    return sink.n;
}

static int arriving_piece(const board_position *pos, const board_move *move)
{
    int piece = pos->piece[move->squares[0]], x, y;
    board_square_coords(move->squares[move->n_squares - 1], &x, &y);
    if ((piece & CB_MAN) && y == crown_row(piece & (CB_BLACK | CB_WHITE)))
        piece = (piece & (CB_BLACK | CB_WHITE)) | CB_KING;
    return piece;
}

void board_play(board_position *pos, const board_move *move)
{
    int piece = arriving_piece(pos, move);
    pos->piece[move->squares[0]] = CB_FREE;
    for (int i = 0; i < move->n_captured; i++)
        pos->piece[move->captured[i]] = CB_FREE;
    pos->piece[move->squares[move->n_squares - 1]] = piece;
    pos->turn = pos->turn == CB_BLACK ? CB_WHITE : CB_BLACK;
}

int board_same(const board_position *a, const board_position *b)
{
    return a->turn == b->turn && memcmp(a->piece, b->piece, sizeof(a->piece)) == 0;
}

int board_move_is_irreversible(const board_position *before, const board_move *move)
{
    return move->n_captured > 0 || (before->piece[move->squares[0]] & CB_MAN) != 0;
}

void board_move_text(const board_move *move, char *text, int size)
{
    char sep = move->n_captured > 0 ? 'x' : '-';
    int used = 0;
    text[0] = '\0';
    for (int i = 0; i < move->n_squares && used < size; i++) {
        if (i == 0)
            used += snprintf(text + used, size - used, "%d", move->squares[i]);
        else
            used += snprintf(text + used, size - used, "%c%d", sep, move->squares[i]);
    }
}

int board_parse_squares(const char *text, int squares[BOARD_MAX_PATH])
{
    int n = 0;
    const char *s = text;
    for (;;) {
        int square = read_number(&s);
        if (square < 1 || square > BOARD_SQUARES || n >= BOARD_MAX_PATH)
            return -1;
        squares[n++] = square;
        if (*s == '-' || *s == 'x' || *s == 'X' || *s == ':')
            s++;
        else
            break;
    }
    return (*s == '\0' && n >= 2) ? n : -1;
}

static int landings_in_order(const board_move *move, const int *squares, int n_squares)
{
    int j = 1;
    for (int i = 1; i < n_squares - 1; i++) {
        while (j < move->n_squares - 1 && move->squares[j] != squares[i])
            j++;
        if (j >= move->n_squares - 1)
            return 0;
        j++;
    }
    return 1;
}

const board_move *board_match_move(const board_position *pos, const board_move *moves, int n,
                                   const int *squares, int n_squares)
{
    const board_move *found = NULL;
    board_position first_result;
    for (int i = 0; i < n; i++) {
        if (moves[i].n_squares == n_squares &&
            memcmp(moves[i].squares, squares, sizeof(int) * (size_t)n_squares) == 0)
            return &moves[i];
    }
    for (int i = 0; i < n; i++) {
        const board_move *m = &moves[i];
        if (m->squares[0] != squares[0] || m->squares[m->n_squares - 1] != squares[n_squares - 1] ||
            !landings_in_order(m, squares, n_squares))
            continue;
        board_position result = *pos;
        board_play(&result, m);
        if (!found) {
            found = m;
            first_result = result;
        } else if (!board_same(&result, &first_result)) {
            return NULL;                      /* ambiguous: different positions */
        }
    }
    return found;
}

int board_fill_cbmove(const board_position *pos, const board_move *move, struct CBmove *cbmove)
{
    memset(cbmove, 0, sizeof(*cbmove));
    if (move->n_squares > CB_MOVE_SLOTS || move->n_captured > CB_MOVE_SLOTS)
        return -1;
    cbmove->jumps = move->n_captured;
    cbmove->oldpiece = pos->piece[move->squares[0]];
    cbmove->newpiece = arriving_piece(pos, move);
    board_square_coords(move->squares[0], &cbmove->from.x, &cbmove->from.y);
    board_square_coords(move->squares[move->n_squares - 1], &cbmove->to.x, &cbmove->to.y);
    for (int i = 0; i < move->n_squares; i++)
        board_square_coords(move->squares[i], &cbmove->path[i].x, &cbmove->path[i].y);
    for (int i = 0; i < move->n_captured; i++) {
        board_square_coords(move->captured[i], &cbmove->del[i].x, &cbmove->del[i].y);
        cbmove->delpiece[i] = pos->piece[move->captured[i]];
    }
    if (move->n_captured < CB_MOVE_SLOTS) {
        cbmove->del[move->n_captured].x = -1;
        cbmove->del[move->n_captured].y = -1;
    }
    return 0;
}
