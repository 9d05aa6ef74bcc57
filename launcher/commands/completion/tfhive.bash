# bash completion for tfhive: source <(tfhive completion bash)
#
# Every Tab asks `tfhive __complete WORD...` (the words after tfhive, up to
# the cursor). Its first line is KIND<tab>PREFIX: "words" and one candidate
# a line follow (maybe with <tab>description, which bash does not show),
# or "files"/"dirs" for bash to complete a path after PREFIX. tfhive bounds
# what a Tab costs (run ids: a 2 s probe at most) and prints no errors;
# its stderr goes nowhere all the same.

# __tfhive_words sets words and cword from COMP_WORDS, joining back what
# bash split at = and : (--hosts=FILE, user@host:port), as bash-completion's
# _get_comp_words_by_ref -n =: does. Without COMP_LINE it cannot tell
# "a=b" from "a = b" and joins nothing.
__tfhive_words() {
	local i w sep line=${COMP_LINE-}
	line=${line:0:${COMP_POINT:-${#line}}}
	line=${line#*"${COMP_WORDS[0]}"}
	words=("${COMP_WORDS[0]}")
	cword=0
	for ((i = 1; i < ${#COMP_WORDS[@]} && i <= COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		sep=${line%%[![:space:]]*}
		line=${line#"$sep"}
		line=${line#"$w"}
		if [[ -n ${COMP_LINE-} && -z $sep && ${#words[@]} -gt 1 &&
			($w == [=:]* || ${words[${#words[@]} - 1]} == *[=:]) ]]; then
			words[${#words[@]} - 1]+=$w
		else
			words+=("$w")
		fi
		if ((i == COMP_CWORD)); then
			cword=$((${#words[@]} - 1))
		fi
	done
}

_tfhive() {
	local cur words cword out kind prefix i c keep=
	if declare -F _get_comp_words_by_ref >/dev/null; then
		_get_comp_words_by_ref -n =: cur words cword
	else
		__tfhive_words
		cur=${words[cword]-}
	fi
	((cword > 0)) || return 0
	out=$(tfhive __complete "${words[@]:1:cword-1}" "$cur" 2>/dev/null) || return 0
	kind=${out%%$'\n'*}
	prefix=${kind#*$'\t'}
	kind=${kind%%$'\t'*}
	COMPREPLY=()
	case $kind in
	words)
		[[ $out == *$'\n'* ]] || return 0
		while IFS= read -r c; do
			COMPREPLY+=("${c%%$'\t'*}")
		done <<<"${out#*$'\n'}"
		;;
	files | dirs)
		compopt -o filenames 2>/dev/null
		local opt=-f
		[[ $kind == dirs ]] && opt=-d
		while IFS= read -r c; do
			[[ -n $c ]] && COMPREPLY+=("$prefix$c")
		done < <(compgen "$opt" -- "${cur#"$prefix"}")
		;;
	esac
	# Readline replaces only what follows the last = or : that bash split
	# the word at: the candidates must not repeat what comes before it.
	for ((i = ${#cur} - 1; i >= 0; i--)); do
		c=${cur:i:1}
		if [[ ($c == = || $c == :) && $COMP_WORDBREAKS == *"$c"* ]]; then
			keep=${cur:0:i+1}
			break
		fi
	done
	if [[ -n $keep ]]; then
		COMPREPLY=("${COMPREPLY[@]#"$keep"}")
	fi
	return 0
}

complete -F _tfhive tfhive
