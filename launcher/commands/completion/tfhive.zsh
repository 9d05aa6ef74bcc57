#compdef tfhive
# zsh completion for tfhive: save as _tfhive in a directory of $fpath, or
# source <(tfhive completion zsh) after compinit.
#
# Every Tab asks `tfhive __complete WORD...` (the words after tfhive, up to
# the cursor). Its first line is KIND<tab>PREFIX: "words" and one candidate
# a line follow, maybe with <tab>description, or "files"/"dirs" for zsh to
# complete a path after PREFIX. tfhive bounds what a Tab costs (run ids: a
# 2 s probe at most) and prints no errors; its stderr goes nowhere all the
# same.

_tfhive() {
	local out head kind prefix line
	local -a lines cands
	out=$(tfhive __complete "${(@Q)words[2,CURRENT-1]}" "${(Q)PREFIX}" 2>/dev/null) || return 1
	lines=("${(@f)out}")
	head=${lines[1]}
	kind=${head%%$'\t'*}
	prefix=${head#*$'\t'}
	case $kind in
	words)
		for line in "${(@)lines[2,-1]}"; do
			# _describe splits WORD:DESCRIPTION at the first unescaped colon.
			if [[ $line == *$'\t'* ]]; then
				cands+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
			else
				cands+=("${line//:/\\:}")
			fi
		done
		(( $#cands )) || return 1
		_describe -t tfhive 'tfhive' cands
		;;
	files | dirs)
		[[ -n $prefix ]] && compset -P "${(b)prefix}"
		if [[ $kind == dirs ]]; then
			_files -/
		else
			_files
		fi
		;;
	*)
		return 1
		;;
	esac
}

if [[ $funcstack[1] == _tfhive ]]; then
	# Loaded from $fpath by compinit: this file is the function's body.
	_tfhive "$@"
else
	compdef _tfhive tfhive
fi
