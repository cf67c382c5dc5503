/*
 * wine_probe.c - a Windows program that loads the bridge DLL the way CheckerBoard does
 * (LoadLibrary + GetProcAddress) and calls enginecommand("name"), "get gametype" and islegal()
 * on the start position; given an engine command (wine_engine.exe) it also plays one getmove
 * through the DLL's Win32 process layer.  Built with mingw-w64 and run under wine by the tests.
 * Exit status 0 when every answer is the expected one.
 */
#include <windows.h>
#include <stdio.h>
#include <string.h>

#include "cb_api.h"

typedef int(__stdcall *enginecommand_fn)(char *, char *);
typedef int(__stdcall *islegal_fn)(int board[8][8], int, int, int, struct CBmove *);
static volatile int playnow;

static DWORD WINAPI press_play(LPVOID when)
{
    Sleep(300);
    *(ULONGLONG *)when = GetTickCount64();
    playnow = 1;
    return 0;
}

typedef int(__stdcall *getmove_fn)(int board[8][8], int, double, char *, int *, int, int, struct CBmove *);

int main(int argc, char **argv)
{
    char command[CB_COMMAND_SIZE], reply[CB_REPLY_SIZE];
    int board[8][8], failures = 0;
    struct CBmove move;
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: wine_probe PATH-TO-DLL [ENGINE-COMMAND]\n");
        return 2;
    }
    HMODULE dll = LoadLibraryA(argv[1]);
    if (!dll) {
        printf("LoadLibrary failed: error %lu\n", (unsigned long)GetLastError());
        return 1;
    }
    enginecommand_fn enginecommand_ptr = (enginecommand_fn)(void (*)(void))GetProcAddress(dll, "enginecommand");
    islegal_fn islegal_ptr = (islegal_fn)(void (*)(void))GetProcAddress(dll, "islegal");
    getmove_fn getmove_ptr = (getmove_fn)(void (*)(void))GetProcAddress(dll, "getmove");
    if (!enginecommand_ptr || !islegal_ptr || !getmove_ptr) {
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
    if (argc == 3) {
        char status[CB_STATUS_SIZE] = "";
        snprintf(command, sizeof(command), "set engine %s", argv[2]);
        handled = enginecommand_ptr(command, reply);
        printf("set engine -> %d '%s'\n", handled, reply);
        failures += handled != 1;
        int result = getmove_ptr(board, CB_BLACK, 1.0, status, (int *)&playnow, CB_RESET_MOVES, 0, &move);
        printf("getmove -> %d '%s'\n", result, status);
        printf("move from (%d,%d) to (%d,%d); board[2][2]=%d board[3][3]=%d\n", move.from.x, move.from.y, move.to.x,
               move.to.y, board[2][2], board[3][3]);
        failures += !(result == CB_UNKNOWN && strstr(status, "wine_engine plays 11-15") && move.from.x == 2 &&
                      move.to.y == 3 && board[2][2] == 0 && board[3][3] == (CB_BLACK | CB_MAN));
        /* playnow: the engine answers only after stop */
        for (int mode = 0; mode < 2; mode++) {
            ULONGLONG pressed = 0;
            snprintf(command, sizeof(command), "set engine %s 11-15 %s", argv[2], mode == 0 ? "wait" : "hang");
            enginecommand_ptr(command, reply);
            for (int y = 0; y < 8; y++)
                for (int x = 0; x < 8; x++)
                    if ((x + y) % 2 == 0)
                        board[x][y] = y < 3 ? (CB_BLACK | CB_MAN) : y > 4 ? (CB_WHITE | CB_MAN) : 0;
            playnow = 0;
            HANDLE presser = CreateThread(NULL, 0, press_play, &pressed, 0, NULL);
            result = getmove_ptr(board, CB_BLACK, 60.0, status, (int *)&playnow, CB_EXACT_TIME, 0, &move);
            ULONGLONG returned = GetTickCount64();
            WaitForSingleObject(presser, INFINITE);
            CloseHandle(presser);
            printf("%s: playnow -> return %llu ms, getmove -> %d '%s'\n", mode == 0 ? "wait" : "hang",
                   (unsigned long long)(returned - pressed), result, status);
            if (mode == 0)   /* stop answered at once (the 100 ms figure is checked natively; wine adds its own delays) */
                failures += !(returned - pressed < 2000 && strstr(status, "plays 11-15") && board[3][3] == (CB_BLACK | CB_MAN));
            else             /* stop ignored: killed after the grace period, board untouched */
                failures += !(strstr(status, "did not answer") && board[2][2] == (CB_BLACK | CB_MAN));
        }
        strcpy(command, "about");
        enginecommand_ptr(command, reply);
        printf("about -> '%s'\n", reply);
        failures += strstr(reply, "engine: wine_engine") == NULL;
    }
    printf("%s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
