/* wl-init: PID 1 of every wholeloop container.
 *
 * Built static by sandbox.docker.native, mounted read-only at /.wholeloop/init and made the
 * container's entrypoint, so PID 1 needs nothing from the image (no shell, no libc, no loader,
 * hence no /etc/ld.so.preload) and nothing in the container can replace it. It runs no other
 * program, ever: a restart of the container (stop_processes) starts this and only this.
 *
 * What it does:
 * - reaps every orphan the container's processes leave (they are reparented to PID 1);
 * - never exits: the container lives until the host kills or removes it;
 * - ignores every signal sent from inside: the kernel drops a signal sent to a PID namespace's
 *   init from inside the namespace unless the init installed a handler, and this one installs
 *   none (SIGCHLD is blocked and waited for, never handled), so kill -9 1, kill -STOP 1 and
 *   kill -9 -1 leave it running. From the host, SIGKILL still works (docker kill);
 * - is not dumpable: without CAP_SYS_PTRACE (which containers do not get), not even root in the
 *   container may ptrace it, write /proc/1/mem, or read /proc/1/environ or /proc/1/fd;
 * - holds nothing the container could use: its standard streams are /dev/null (nothing written
 *   to them reaches the engine's log), every other descriptor is closed, its directory is /.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(void) {
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
    }
    for (int fd = 3; fd < 4096; fd++)
        close(fd);
    if (chdir("/") != 0) {
        /* nothing to do: the working directory only matters to processes we never start */
    }

    sigset_t child;
    sigemptyset(&child);
    sigaddset(&child, SIGCHLD);
    sigprocmask(SIG_BLOCK, &child, NULL); /* waited for below, never delivered to a handler */

    for (;;) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ; /* reap every child that ended */
        struct timespec again = {60, 0}; /* a periodic look too, should a SIGCHLD ever be missed */
        sigtimedwait(&child, NULL, &again);
    }
}
