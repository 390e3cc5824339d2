# Completes a command line as bash does on Tab, with a completion script.
#
#   bash --norc --noprofile complete.bash SCRIPT WORD...
#
# Sources SCRIPT, finds the function that `complete -p mcp-tools` names, and calls it as
# bash's programmable completion does with the cursor at the end of the last WORD (an
# empty last WORD: after a space): COMP_WORDS, COMP_CWORD, COMP_LINE and COMP_POINT set,
# the command, the word and the word before it as arguments. Prints COMPREPLY, one
# match a line.
source "$1" || exit 3
shift
spec=$(complete -p mcp-tools) || exit 3
func=${spec#*-F }
func=${func%% *}
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
COMPREPLY=()
prev=
if ((COMP_CWORD > 0)); then
    prev=${COMP_WORDS[COMP_CWORD - 1]}
fi
# compopt (for flags that take a file) only works inside a completion bash started
# itself; what it would say is not what is tested.
"$func" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "$prev" 2>/dev/null
if ((${#COMPREPLY[@]})); then
    printf '%s\n' "${COMPREPLY[@]}"
fi
