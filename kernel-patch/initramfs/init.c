// SPDX-License-Identifier: GPL-2.0
/*
 * init.c - /init of the selftest initramfs (kernel-patch/run-selftest.sh).
 *
 * Mounts what a KVM selftest needs, runs every program it finds in
 * /selftests, prints one "SELFTEST <name> rc=<n>" line per program and a
 * final "SELFTESTS DONE failed=<n> skipped=<n>" line on the console, and powers off, so
 * that the host can read the result from the serial log.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int run(const char *path)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		execl(path, path, (char *)NULL);
		perror(path);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return 126;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

int main(void)
{
	struct dirent *d;
	int failed = 0, skipped = 0;
	char path[512];
	DIR *dir;

	mkdir("/dev", 0755);
	mkdir("/proc", 0755);
	mkdir("/sys", 0755);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	setvbuf(stdout, NULL, _IONBF, 0);

	printf("SELFTEST /dev/kvm %s\n",
	       access("/dev/kvm", R_OK | W_OK) ? "missing" : "present");

	dir = opendir("/selftests");
	while (dir && (d = readdir(dir))) {
		int rc;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/selftests/%s", d->d_name);
		printf("SELFTEST %s start\n", d->d_name);
		rc = run(path);
		/* kselftest: 4 is KSFT_SKIP */
		printf("SELFTEST %s rc=%d%s\n", d->d_name, rc,
		       rc == 0 ? " PASS" : rc == 4 ? " SKIP" : " FAIL");
		if (rc == 4)
			skipped++;
		else if (rc != 0)
			failed++;
	}
	printf("SELFTESTS DONE failed=%d skipped=%d\n", failed, skipped);

	sync();
	reboot(RB_POWER_OFF);
	return 0;
}
