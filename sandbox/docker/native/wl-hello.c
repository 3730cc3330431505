/* wl-hello: the smallest native helper; tests/test_native.py checks that static binaries built
 * by sandbox.docker.native run in a container with nothing else (no libc, no shell). */
#include <unistd.h>

int main(void) {
    static const char msg[] = "wholeloop native helper ok\n";
    return write(1, msg, sizeof msg - 1) == (ssize_t)(sizeof msg - 1) ? 0 : 1;
}
