/*
 * wine_probe.c - a Windows program that loads the bridge DLL the way CheckerBoard does
 * (LoadLibrary + GetProcAddress) and calls enginecommand("name"), "get gametype" and islegal()
 * on the start position.  Built with mingw-w64 and run under wine by the tests; it needs no
 * engine process.  Exit status 0 when every answer is the expected one.
 */
#include <windows.h>
#include <stdio.h>
#include <string.h>

#include "cb_api.h"

typedef int(__stdcall *enginecommand_fn)(char *, char *);
typedef int(__stdcall *islegal_fn)(int board[8][8], int, int, int, struct CBmove *);

int main(int argc, char **argv)
{
    char command[CB_COMMAND_SIZE], reply[CB_REPLY_SIZE];
    int board[8][8], failures = 0;
    struct CBmove move;
    if (argc != 2) {
        fprintf(stderr, "usage: wine_probe PATH-TO-DLL\n");
        return 2;
    }
    HMODULE dll = LoadLibraryA(argv[1]);
    if (!dll) {
        printf("LoadLibrary failed: error %lu\n", (unsigned long)GetLastError());
        return 1;
    }
    enginecommand_fn enginecommand_ptr = (enginecommand_fn)(void (*)(void))GetProcAddress(dll, "enginecommand");
    islegal_fn islegal_ptr = (islegal_fn)(void (*)(void))GetProcAddress(dll, "islegal");
    if (!enginecommand_ptr || !islegal_ptr || !GetProcAddress(dll, "getmove")) {
        printf("missing export\n");
        return 1;
    }
    strcpy(command, "name");
    int handled = enginecommand_ptr(command, reply);
    printf("name -> %d '%s'\n", handled, reply);
    failures += !(handled == 1 && strcmp(reply, "uci_checkers") == 0);
    strcpy(command, "get gametype");
    handled = enginecommand_ptr(command, reply);
    printf("get gametype -> %d '%s'\n", handled, reply);
    failures += !(handled == 1 && strcmp(reply, "21") == 0);

    /* the start position: Black men on squares 1-12 (rows y = 0..2), White on 21-32 */
    memset(board, 0, sizeof(board));
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++)
            if ((x + y) % 2 == 0 && y != 3 && y != 4)
                board[x][y] = y < 3 ? (CB_BLACK | CB_MAN) : (CB_WHITE | CB_MAN);
    int legal = islegal_ptr(board, CB_BLACK, 11, 15, &move);
    printf("islegal 11-15 -> %d from (%d,%d) to (%d,%d)\n", legal, move.from.x, move.from.y, move.to.x, move.to.y);
    failures += !(legal == 1 && move.from.x == 2 && move.from.y == 2 && move.to.x == 3 && move.to.y == 3);
    legal = islegal_ptr(board, CB_BLACK, 11, 16, &move);
    printf("islegal 11-16 -> %d\n", legal);
    failures += !(legal == 1);
    legal = islegal_ptr(board, CB_BLACK, 11, 18, &move);
    printf("islegal 11-18 -> %d\n", legal);
    failures += !(legal == 0);
    printf("%s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
