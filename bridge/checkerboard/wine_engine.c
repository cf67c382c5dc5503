/*
 * wine_engine.c - a stand-in engine for wine_probe.c: a Windows console program that speaks just
 * enough of protocol.md (uci, isready, position, go, stop, quit) for the probe to drive the DLL's
 * Win32 process layer (CreateProcess, pipes, job object) under wine.  It is not an engine: every
 * go is answered with the move given on its command line (default 11-15): at once, or (mode "wait")
 * only after stop, or (mode "hang") never.
 */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    char line[65536];
    const char *reply = argc > 1 ? argv[1] : "11-15";
    const char *mode = argc > 2 ? argv[2] : "answer";
    int searching = 0;
    setvbuf(stdout, NULL, _IONBF, 0);
    while (fgets(line, sizeof(line), stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (strcmp(line, "uci") == 0)
            printf("id name wine_engine\nid author uci_checkers tests\n"
                   "option name Hash type spin default 16 min 1 max 4096\nuciok\n");
        else if (strcmp(line, "isready") == 0)
            printf("readyok\n");
        else if (strncmp(line, "go", 2) == 0 && strcmp(mode, "answer") == 0)
            printf("info depth 1 seldepth 1 multipv 1 score cp 7 nodes 1 nps 1000 hashfull 0 time 1 pv %s\n"
                   "bestmove %s\n", reply, reply);
        else if (strncmp(line, "go", 2) == 0)
            searching = 1;
        else if (strcmp(line, "stop") == 0 && searching && strcmp(mode, "wait") == 0) {
            printf("bestmove %s\n", reply);
            searching = 0;
        }
        else if (strcmp(line, "quit") == 0)
            return 0;
    }
    return 0;
}
