from webward._program import run

run()
