/*
 * Preloaded into an attaching client by tui-client: the client's first
 * blocking of its signals waits 2 s, so the server draws on the terminal
 * before the client's handlers are set (the order a loaded machine made
 * happen once: a hang-up in that gap was lost, ignored as under nohup).
 */
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

int
sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	static int (*real)(int, const sigset_t *, sigset_t *);
	static int slept;

	if (real == NULL)
		real = (int (*)(int, const sigset_t *, sigset_t *))dlsym(
		    RTLD_NEXT, "sigprocmask");
	if (!slept && how == SIG_BLOCK && set != NULL &&
	    sigismember(set, SIGWINCH) == 1) {
		slept = 1;
		sleep(2);
	}
	return real(how, set, old);
}
