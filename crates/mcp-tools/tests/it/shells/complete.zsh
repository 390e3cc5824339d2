# Completes a command line as an interactive zsh does on Tab, with compsys.
#
#   zsh -f complete.zsh DIR LINE
#
# DIR holds the completion function (_mcp-tools). zsh completes only inside its line
# editor, so an interactive zsh (no startup files) is started on a pseudo-terminal with
# zsh/zpty, as zsh's own completion tests do; it loads compinit with DIR first in
# fpath, wraps compadd so that each match it adds is also printed, and ends every
# completion with a marker. LINE is typed, then Tab; the matches are printed one a line.
# Every read waits for a marker: nothing depends on timing.
emulate -L zsh
zmodload zsh/zpty || { print -u2 "complete.zsh: zsh/zpty is missing"; exit 3 }
local dir=$1 line=$2
local setup=${TMPDIR:-/tmp}/complete-zsh-$$.zsh
cat > $setup <<SETUP
PS1='' PROMPT='' RPROMPT=''
unsetopt zle_bracketed_paste 2>/dev/null
fpath=(${(q)dir} \$fpath)
autoload -Uz compinit && compinit -u -D
zstyle ':completion:*' list-grouped false
bindkey '^I' complete-word
compadd() {
    # Calls that only ask which words match (-O, -A, -D) add nothing: passed on.
    local -a opts=("\${(@)@[1,(i)(-|--)]}")
    if (( \${opts[(I)-[OAD]*]} )); then
        builtin compadd "\$@"
        return
    fi
    local -a hits
    builtin compadd -O hits "\$@"
    (( \$#hits )) && print -rl -- "<<match>>"\${^hits}
    builtin compadd "\$@"
}
_complete_ends() { print -r -- "<<end>>" }
comppostfuncs=(_complete_ends)
print -r -- "ready-\$((6 * 7))"
SETUP
zpty z env TERM=dumb zsh -f -i
zpty -w z "source ${(q)setup}"
local out
zpty -r z out '*ready-42*' || { print -u2 "complete.zsh: the shell did not start"; exit 3 }
zpty -w -n z "$line"$'\t'
zpty -r z out '*<<end>>*' || { print -u2 "complete.zsh: no completion ran"; exit 3 }
zpty -d z
rm -f $setup
local row
for row in ${(f)out}; do
    row=${row//$'\r'/}
    [[ $row == *'<<match>>'* ]] && print -r -- ${row#*<<match>>}
done
exit 0
