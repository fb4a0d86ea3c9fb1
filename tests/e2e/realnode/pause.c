/* The pod sandbox's PID 1 for the real nodes of e2e (no registry serves registry.k8s.io/pause):
 * it holds the pod's namespaces, reaps the orphans a shared PID namespace hands it, and exits 0
 * on SIGINT or SIGTERM. Built with `gcc -O2 -static` by tests/e2e/realnode/toolchain.py. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
    (void)sig;
    _exit(0);
}

static void on_child(int sig) {
    (void)sig;
    while (waitpid(-1, 0, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction stop = {.sa_handler = on_stop};
    struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
    sigaction(SIGINT, &stop, 0);
    sigaction(SIGTERM, &stop, 0);
    sigaction(SIGCHLD, &child, 0);
    for (;;) {
        pause();
    }
}
