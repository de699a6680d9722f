"""`make run`: the whole system on the embedded default, with nothing but Python.

Migrates the SQLite database, loads the synthetic demo benchmark, starts the judge simulator
(unless JUDGE_BASE_URLS names a real fleet), a Celery worker with its beat scheduler on kombu's
filesystem broker, and the web server on 127.0.0.1:$PORT; stops them all on Ctrl-C or when any
of them exits.
"""

import os
import signal
import subprocess
import sys
import time

SIMULATOR_PORTS = os.environ.get("SIMULATOR_PORTS", "8001,8002")


def manage(*args: str) -> list[str]:
    return [sys.executable, "manage.py", *args]


def main() -> int:
    env = dict(os.environ)
    port = env.setdefault("PORT", "8000")
    processes: list[tuple[str, subprocess.Popen]] = []
    if not env.get("JUDGE_BASE_URLS"):
        env["JUDGE_BASE_URLS"] = ",".join(
            f"http://127.0.0.1:{p}" for p in SIMULATOR_PORTS.split(",")
        )
        processes.append(("judge simulator", subprocess.Popen(
            manage("judge_simulator", "--ports", SIMULATOR_PORTS), env=env)))
    subprocess.run(manage("migrate", "--noinput", "-v", "0"), env=env, check=True)
    subprocess.run(manage("collectstatic", "--noinput", "-v", "0"), env=env, check=True)
    subprocess.run(manage("load_demo"), env=env, check=True)
    processes.append(("worker", subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--beat", "--loglevel",
         "INFO", "--concurrency", "2", "--queues",
         f"{env.get('CELERY_TASK_DEFAULT_QUEUE', 'celery')},"
         f"{env.get('SCORING_RESCORE_QUEUE', 'rescore')}", "--schedule",
         os.path.join(env.get("VAR_DIR", "var"), "celerybeat-schedule")],
        env=env)))
    processes.append(("web", subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}",
         "--workers", "2", "--threads", "4", "--access-logfile", "-"],
        env=env)))
    print(f"\n  web:   http://127.0.0.1:{port}/\n  judge: {env['JUDGE_BASE_URLS']}\n"
          "  Ctrl-C stops everything.\n", flush=True)

    stopping = False

    def stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    code = 0
    while not stopping:
        for name, process in processes:
            if process.poll() is not None:
                print(f"{name} exited with code {process.returncode}; stopping", flush=True)
                code, stopping = process.returncode or 1, True
        time.sleep(0.5)
    for _, process in processes:
        if process.poll() is None:
            process.terminate()
    for _, process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
    return code


if __name__ == "__main__":
    sys.exit(main())
