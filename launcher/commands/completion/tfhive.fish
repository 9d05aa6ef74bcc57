# fish completion for tfhive: save as ~/.config/fish/completions/tfhive.fish,
# or tfhive completion fish | source
#
# Every Tab asks `tfhive __complete WORD...` (the words after tfhive, up to
# the cursor). Its first line is KIND<tab>PREFIX: "words" and one candidate
# a line follow, maybe with <tab>description (as fish wants them), or
# "files"/"dirs" for fish to complete a path after PREFIX. tfhive bounds
# what a Tab costs (run ids: a 2 s probe at most) and prints no errors;
# its stderr goes nowhere all the same.

function __tfhive_complete
    set -l args (commandline -opc)
    set -e args[1]
    set -l cur (commandline -ct)
    set -l out (tfhive __complete $args $cur 2>/dev/null)
    or return
    set -l head (string split -m 1 \t -- $out[1])
    set -e out[1]
    switch $head[1]
        case words
            set -q out[1]; and printf '%s\n' $out
        case files dirs
            set -l part (string sub -s (math (string length -- "$head[2]") + 1) -- $cur)
            set -l paths
            if test $head[1] = dirs
                set paths (__fish_complete_directories $part)
            else
                set paths (__fish_complete_path $part)
            end
            set -q paths[1]; and printf '%s\n' "$head[2]"$paths
    end
end

complete -c tfhive -f -a '(__tfhive_complete)'
