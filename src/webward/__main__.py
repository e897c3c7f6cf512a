from webward.cli import run

run()
