#!/usr/bin/env python3
"""Writes courier(1) from the tool's own description of its commands.

Reads what `courier --experimental-dump-help` prints (swift-argument-parser's tool description: every command's
abstract, discussion and arguments, the same declarations --help shows) on standard input and writes one man page
in man(7) macros on standard output: NAME, SYNOPSIS, then a section per subcommand with its options.

    courier --experimental-dump-help | python3 scripts/lib/manpage.py VERSION >courier.1
"""
import datetime
import json
import sys


def escape(text):
    """Text for a man page line: backslashes doubled, a leading dot or quote made literal, dashes as dashes."""
    text = text.replace("\\", "\\\\").replace("-", "\\-")
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def flag_names(argument):
    names = []
    for name in argument.get("names", []):
        prefix = "-" if name["kind"] in ("short", "longWithSingleDash") else "--"
        names.append("\\fB" + escape(prefix + name["name"]) + "\\fR")
    text = ", ".join(names)
    if argument["kind"] == "option":
        text += " \\fI" + escape(argument.get("valueName", "value")) + "\\fR"
    return text


def arguments(command, out):
    for argument in command.get("arguments", []):
        if not argument.get("shouldDisplay", True):
            continue
        if argument["kind"] == "positional":
            heading = "\\fI" + escape(argument.get("valueName", "value")) + "\\fR"
            if argument.get("isRepeating"):
                heading += " ..."
        else:
            heading = flag_names(argument)
        out.append(".TP")
        out.append(heading)
        about = argument.get("abstract", "")
        if "defaultValue" in argument:
            about += " (default: %s)" % argument["defaultValue"]
        if argument.get("discussion"):
            about += "\n" + str(argument["discussion"])
        out.append(escape(about))


def section(command, path, out):
    name = " ".join(path)
    out.append(".SH " + escape(name.upper()))
    if command.get("abstract"):
        out.append(escape(command["abstract"]))
    if command.get("discussion"):
        for paragraph in command["discussion"].split("\n\n"):
            out.append(".PP")
            out.append(escape(paragraph.strip()))
    arguments(command, out)
    for sub in command.get("subcommands", []):
        if sub.get("shouldDisplay", True):
            section(sub, path + [sub["commandName"]], out)


def main():
    version = sys.argv[1] if len(sys.argv) > 1 else ""
    tool = json.load(sys.stdin)["command"]
    name = tool["commandName"]
    date = datetime.date.today().isoformat()
    out = ['.TH %s 1 "%s" "%s" "User Commands"' % (name.upper(), date, escape(version))]
    out.append(".SH NAME")
    out.append("%s \\- %s" % (name, escape(tool.get("abstract", ""))))
    out.append(".SH SYNOPSIS")
    out.append("\\fB%s\\fR \\fIsubcommand\\fR [\\fIoptions\\fR]" % name)
    subcommands = [sub for sub in tool.get("subcommands", []) if sub.get("shouldDisplay", True)]
    out.append(".PP")
    out.append("Subcommands: " + ", ".join("\\fB%s\\fR" % sub["commandName"] for sub in subcommands) + ".")
    out.append("Each is described below; \\fB%s\\fR \\fIsubcommand\\fR \\fB\\-\\-help\\fR says the same." % name)
    if tool.get("discussion"):
        out.append(".PP")
        out.append(escape(tool["discussion"]))
    arguments(tool, out)
    for sub in subcommands:
        section(sub, [name, sub["commandName"]], out)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
