# scripts/commands.sh CLI: prints the commands that `CLI --help` lists, one
# per line (first words: "image" for image build), so that the man page, the
# completion and their tests take the list from the one place that has it.
# Sourced or run; an empty list is an error.
"$1" --help | awk '/^commands:/ {on = 1; next} on && NF == 0 {exit} on {print $1}' | grep . ||
	{ echo "commands.sh: '$1 --help' lists no commands" >&2; exit 1; }
