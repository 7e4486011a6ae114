# Rewrites tmux's `capture-pane -p -e` output in one canonical form, so that screens compare cell by cell.
#
# tmux places SGR sequences where the drawing history put them (a run of blanks written with spaces or
# cleared with EL captures differently), so one screen can capture two ways. Here every line starts from
# the default rendition, each change is one full SGR sequence (ESC [ 0 ; ... m), a blank takes the
# rendition before it unless what shows on a blank differs (background, reverse, underline, strike, the
# foreground when reversed), and trailing blanks that show nothing are dropped. `cat` still shows colour.

# The rendition now, as "attrs|fg|bg" (attrs: sorted digits of 1 2 3 4 5 7 8 9).
function rendition(    a, i, d) {
	a = ""
	for (i = 1; i <= 9; i++) {
		d = i ""
		if (d in on)
			a = a d
	}
	return a "|" fg "|" bg
}

# What of rendition K shows on a blank.
function shows(k,    p, a, i, c, out) {
	split(k, p, "|")
	a = p[1]
	out = ""
	for (i = 1; i <= length(a); i++) {
		c = substr(a, i, 1)
		if (c == "4" || c == "7" || c == "9")
			out = out c
	}
	return out "|" (index(out, "7") ? p[2] : "") "|" p[3]
}

function sgr(k,    p, a, i, s) {
	split(k, p, "|")
	a = p[1]
	s = "\033[0"
	for (i = 1; i <= length(a); i++)
		s = s ";" substr(a, i, 1)
	if (p[2] != "")
		s = s ";" p[2]
	if (p[3] != "")
		s = s ";" p[3]
	return s "m"
}

# Applies the parameters of one SGR sequence.
function apply(params,    n, v, i, d, c) {
	gsub(":", ";", params)
	n = split(params, v, ";")
	if (n == 0) {
		n = 1
		v[1] = "0"
	}
	for (i = 1; i <= n; i++) {
		d = v[i] + 0
		if (d == 0) {
			for (c in on)
				delete on[c]
			fg = bg = ""
		} else if (d == 1 || d == 2 || d == 3 || d == 4 || d == 5 || d == 7 || d == 8 || d == 9)
			on[d ""] = 1
		else if (d == 22) {
			delete on["1"]
			delete on["2"]
		} else if (d >= 23 && d <= 29 && d != 26)
			delete on[(d - 20) ""]
		else if ((d >= 30 && d <= 37) || (d >= 90 && d <= 97))
			fg = d ""
		else if ((d >= 40 && d <= 47) || (d >= 100 && d <= 107))
			bg = d ""
		else if (d == 39)
			fg = ""
		else if (d == 49)
			bg = ""
		else if (d == 38 || d == 48) {
			if (v[i + 1] == "5" && i + 2 <= n) {
				c = d ";5;" v[i + 2]
				i += 2
			} else if (v[i + 1] == "2" && i + 4 <= n) {
				c = d ";2;" v[i + 2] ";" v[i + 3] ";" v[i + 4]
				i += 4
			} else
				break
			if (d == 38)
				fg = c
			else
				bg = c
		}
	}
}

BEGIN {
	fg = bg = ""
	default = "||"
}

{
	line = $0
	n = 0
	while (length(line) > 0) {
		if (substr(line, 1, 2) == "\033[") {
			j = 3
			while (j <= length(line) && substr(line, j, 1) ~ /[0-9;:]/)
				j++
			if (substr(line, j, 1) == "m")
				apply(substr(line, 3, j - 3))
			line = substr(line, j + 1)
			continue
		}
		n++
		ch[n] = substr(line, 1, 1)
		key[n] = rendition()
		line = substr(line, 2)
	}
	while (n > 0 && ch[n] == " " && shows(key[n]) == default)
		n--
	out = ""
	last = default
	for (i = 1; i <= n; i++) {
		k = key[i]
		if (ch[i] == " " && shows(k) == shows(last))
			k = last
		else if (ch[i] == " ")
			k = shows(k)
		if (k != last) {
			out = out sgr(k)
			last = k
		}
		out = out ch[i]
	}
	if (last != default)
		out = out sgr(default)
	print out
}
