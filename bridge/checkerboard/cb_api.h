/*
 * cb_api.h - the CheckerBoard engine API, as this bridge implements it.
 *
 * CheckerBoard (Martin Fierz, Ed Gilbert; Windows) loads an engine as a DLL and calls
 * getmove() and enginecommand() (islegal() is optional for English checkers).  The layout
 * below follows the public API description: CheckerBoard's "CB API reference" page
 * (cb_api_reference.htm) and its cb_interface.h.  It is written here from that description,
 * not copied.  Everything is plain C99; the calling convention is __stdcall on Windows
 * (a no-op on x64) and the default on other systems, where the library only serves tests.
 *
 * Board: int board[8][8] indexed board[x][y].  x is the column (0 = left), y the row
 * (0 = the row of squares 1-4, Black's back row).  For English checkers (game type 21) square
 * n (1..32) lies at y = (n-1)/4, x = 2*(3 - (n-1)%4) + (y odd), so square 1 is (6,0),
 * square 4 is (0,0), square 5 is (7,1) and square 32 is (1,7).  Black (the first mover)
 * starts on 1-12 (y = 0..2) and crowns on y = 7; White crowns on y = 0.
 */
#ifndef UCI_CHECKERS_CB_API_H
#define UCI_CHECKERS_CB_API_H

/* Contents of a board square: a colour bit or'ed with a kind bit; 0 = empty. */
#define CB_FREE 0
#define CB_WHITE 1
#define CB_BLACK 2
#define CB_MAN 4
#define CB_KING 8

/* Return values of getmove(): the game result the engine claims. */
#define CB_DRAW 0
#define CB_WIN 1
#define CB_LOSS 2
#define CB_UNKNOWN 3

/* Bits of getmove()'s info argument. */
#define CB_RESET_MOVES 1   /* a new game or a jump in the game: forget the move history */
#define CB_EXACT_TIME 2    /* use exactly maxtime, not maxtime on average */
/* Bits 2-3: incremental (Fischer) clock.  0 = off, 1/2/3 = the clock values in moreinfo are in
 * units of 1 ms / 10 ms / 100 ms; moreinfo's high 16 bits hold the time left, its low 16 bits the
 * increment. */
#define CB_INCR_TIME_SHIFT 2
#define CB_INCR_TIME_MASK 3

#define CB_GAMETYPE_ENGLISH 21
#define CB_PROTOCOL_VERSION 2
#define CB_STATUS_SIZE 1024          /* getmove's str[] */
#define CB_COMMAND_SIZE 256          /* enginecommand's command[] */
#define CB_REPLY_SIZE 1024           /* enginecommand's reply[] */
#define CB_MOVE_SLOTS 12             /* path[], del[], delpiece[] */

struct coor {
    int x;
    int y;
};

/* A move as CheckerBoard animates and applies it: from/to, path[0] = from and path[1..] the
 * landing squares (path[jumps] = to for a capture, path[1] = to for a plain move), del[i] and
 * delpiece[i] the square and piece of the i-th captured piece (del[jumps].x = -1 ends the list),
 * oldpiece the moving piece, newpiece the piece that arrives (a crowned man arrives as a king). */
struct CBmove {
    int jumps;
    int newpiece;
    int oldpiece;
    struct coor from;
    struct coor to;
    struct coor path[CB_MOVE_SLOTS];
    struct coor del[CB_MOVE_SLOTS];
    int delpiece[CB_MOVE_SLOTS];
};

#if defined(_WIN32)
#define CB_EXPORT __declspec(dllexport)
#define CB_CALL __stdcall
#else
#define CB_EXPORT __attribute__((visibility("default")))
#define CB_CALL
#endif

CB_EXPORT int CB_CALL getmove(int board[8][8], int color, double maxtime, char str[CB_STATUS_SIZE],
                              int *playnow, int info, int moreinfo, struct CBmove *move);
CB_EXPORT int CB_CALL enginecommand(char command[CB_COMMAND_SIZE], char reply[CB_REPLY_SIZE]);
CB_EXPORT int CB_CALL islegal(int board[8][8], int color, int from, int to, struct CBmove *move);

#endif
