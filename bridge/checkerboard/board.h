/*
 * board.h - English checkers for the bridge: square numbering, FEN, legal moves, CBmove.
 *
 * The bridge needs its own small rules core because it must (1) turn CheckerBoard's
 * int[8][8] board into the PDN FEN the engine reads and back, (2) find which move the
 * opponent played between two getmove() calls (to send the game so far, for repetitions),
 * (3) check the engine's move and fill the CBmove exactly (captured squares and pieces,
 * crowning).  The rules are those of shared/spec/rules.md; tests compare this generator with
 * the package's own (uci_checkers.rules.position) on hundreds of positions.
 */
#ifndef UCI_CHECKERS_CB_BOARD_H
#define UCI_CHECKERS_CB_BOARD_H

#include "cb_api.h"

#define BOARD_SQUARES 32
#define BOARD_MAX_PATH 16     /* start square + landings (English chains are far shorter) */
#define BOARD_MAX_MOVES 256
#define BOARD_FEN_SIZE 160    /* "B:W" + 32 x "K32," + ":B" + NUL fits easily */

/* A position: piece[1..32] holds CB_* values (piece[0] unused), turn is CB_BLACK or CB_WHITE. */
typedef struct {
    int piece[BOARD_SQUARES + 1];
    int turn;
} board_position;

/* A legal move: squares[0] the start, squares[1..n_squares-1] the landings; captured[] in the
 * order the pieces are jumped. */
typedef struct {
    int n_squares;
    int squares[BOARD_MAX_PATH];
    int n_captured;
    int captured[BOARD_MAX_PATH];
} board_move;

void board_square_coords(int square, int *x, int *y);
int board_coords_square(int x, int y);               /* 0 for a light or off-board square */

/* CheckerBoard's array <-> position.  from_cb: 0 ok, -1 if the array holds a value that is no
 * piece or a piece on a light square (the message says which). */
int board_from_cb(const int cb[8][8], int color, board_position *pos, char *error, int error_size);
void board_to_cb(const board_position *pos, int cb[8][8]);

/* The canonical FEN (as the engine writes it: squares ascending, K before kings). */
void board_to_fen(const board_position *pos, char fen[BOARD_FEN_SIZE]);
/* Reads PDN FEN (either list first, ranges, spaces, a final '.'); 0 ok, -1 with a message. */
int board_from_fen(const char *fen, board_position *pos, char *error, int error_size);

/* Every legal move (captures only when one exists); returns the count (at most max). */
int board_legal_moves(const board_position *pos, board_move *moves, int max);
void board_play(board_position *pos, const board_move *move);
int board_same(const board_position *a, const board_position *b);
/* A capture or a man move: no earlier position can come back after it. */
int board_move_is_irreversible(const board_position *before, const board_move *move);

/* Move text: "11-15", "15x24x31".  board_parse_move: the squares of a text, count or -1. */
void board_move_text(const board_move *move, char *text, int size);
int board_parse_squares(const char *text, int squares[BOARD_MAX_PATH]);
/* The legal move a text names: an exact path, else the single legal move (or several that all
 * lead to the same position) with that start, end and those landings in order; NULL if none. */
const board_move *board_match_move(const board_position *pos, const board_move *moves, int n,
                                   const int *squares, int n_squares);

/* Fill a CBmove for a legal move in pos (0 ok, -1 if the move is longer than CBmove holds). */
int board_fill_cbmove(const board_position *pos, const board_move *move, struct CBmove *cbmove);

#endif
