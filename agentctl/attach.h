/*
 * agentctl attach: the session's terminal in the operator's own, through the terminal WebSocket
 * (wsc.h). The local terminal is put in raw mode for the time of the attach (and always put back),
 * its size is sent at the start (?cols=&rows=) and again on each SIGWINCH as the bridge's resize
 * frame ("\x01<cols>;<rows>"), keys go as binary frames, the pane's bytes go to stdout. The
 * detach key (CTL_ATTACH_DETACH_KEY) or the end of stdin ends the attach; the session runs on.
 */
#ifndef AGENTD_CTL_ATTACH_H
#define AGENTD_CTL_ATTACH_H

#include "conf.h"

#define CTL_ATTACH_DETACH_KEY  0x1d /* Ctrl-]: telnet's escape, rarely needed inside the TUI */
#define CTL_ATTACH_DETACH_NAME "Ctrl-]"
#define CTL_ATTACH_READ_MAX    4096 /* keys read at once; pasted text comes in such chunks */

/* Attaches to session id. Returns a CTL_EXIT_* code (cli.h); messages go to stderr. */
int ctl_attach(const struct ctl_conf *conf, const char *id);

/* Builds the resize frame for cols x rows into out. Returns its length, or 0 when a size is out
 * of the bridge's range (1..1000) or out is too small. */
size_t ctl_attach_resize_frame(char *out, size_t size, unsigned cols, unsigned rows);

#endif
