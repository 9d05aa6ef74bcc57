# shellcheck shell=bash
# tfhive_tenths sets tfhive_now to the time in tenths of a second (bash 5's
# EPOCHREALTIME, whatever the locale's decimal point; whole seconds from
# printf's clock before it): no process. The idle watch and the
# multiplexer's pump tell time by it.
tfhive_tenths() {
	if [ -n "${EPOCHREALTIME-}" ]; then
		tfhive_now=${EPOCHREALTIME//[!0-9]/}
		tfhive_now=$((10#$tfhive_now / 100000))
	else
		printf -v tfhive_now '%(%s)T' -1
		tfhive_now=$((tfhive_now * 10))
	fi
}
