-- hostile: run a shell command
return os.execute("touch /tmp/fc-hostile-pwned")
