# mutant-lib.sh - sourced by mutants.sh and test_mutants_apply.sh: how a
# mutant file is read and applied, in one place, so that the check in 'make
# check' and 'make mutants' agree on what is stale.

# header FIELD FILE: the value of "FIELD: value" in the mutant's header
header() {
	sed -n "/^@@/q; s/^$1:[[:space:]]*//p" "$2" | head -n 1
}

# apply MUTANT TARGET: rewrites TARGET; status 3 (and a reason on stdout) when stale
apply() {
	perl -e '
		my ($mutant, $target) = @ARGV;
		open my $m, "<", $mutant or die "$mutant: $!\n";
		my (@pairs, $mode, $orig, $repl);
		while (my $line = <$m>) {
			if ($line =~ /^\@\@ original\s*$/) { $mode = "o"; $orig = ""; $repl = ""; next; }
			if ($line =~ /^\@\@ replacement\s*$/) { $mode = "r"; next; }
			if ($line =~ /^\@\@ end\s*$/) { push @pairs, [$orig, $repl] if defined $mode; $mode = undef; next; }
			next unless defined $mode;
			if ($mode eq "o") { $orig .= $line } else { $repl .= $line }
		}
		if (!@pairs) { print "no \@\@ original/replacement/end blocks\n"; exit 3; }
		open my $t, "<", $target or do { print "no file $target\n"; exit 3; };
		local $/; my $text = <$t>; close $t;
		my $i = 0;
		for my $p (@pairs) {
			$i++;
			my ($o, $r) = @$p;
			if ($o eq "") { print "block $i: empty original\n"; exit 3; }
			my $count = () = $text =~ /\Q$o\E/g;
			if ($count != 1) { print "block $i: the original occurs $count times\n"; exit 3; }
			my $at = index($text, $o);
			substr($text, $at, length($o)) = $r;
		}
		open $t, ">", $target or die "$target: $!\n";
		print $t $text; close $t;
	' "$1" "$2"
}
