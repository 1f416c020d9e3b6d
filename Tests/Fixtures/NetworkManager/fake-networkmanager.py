#!/usr/bin/python3
"""NetworkManager's Metered property on a private D-Bus bus, for courierd's condition tests.

    fake-networkmanager.py BUS_ADDRESS METERED

Owns org.freedesktop.NetworkManager on the bus at BUS_ADDRESS and answers
org.freedesktop.DBus.Properties.Get("org.freedesktop.NetworkManager", "Metered") on
/org/freedesktop/NetworkManager with the uint32 METERED (NMMetered: 0 unknown, 1 yes, 2 no, 3 guess-yes,
4 guess-no); every other call gets UnknownMethod. Prints "ready" once it owns the name; runs until killed.
Needs Debian's python3-jeepney (a pure-Python D-Bus library).
"""
import sys

from jeepney import HeaderFields, MessageType, new_error, new_method_return
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

address, metered = sys.argv[1], int(sys.argv[2])
connection = open_dbus_connection(bus=address)
connection.send_and_get_reply(message_bus.RequestName("org.freedesktop.NetworkManager"))
print("ready", flush=True)
while True:
    message = connection.receive()
    if message.header.message_type != MessageType.method_call:
        continue
    fields = message.header.fields
    asked = (
        fields.get(HeaderFields.path),
        fields.get(HeaderFields.interface),
        fields.get(HeaderFields.member),
        tuple(message.body),
    )
    wanted = (
        "/org/freedesktop/NetworkManager",
        "org.freedesktop.DBus.Properties",
        "Get",
        ("org.freedesktop.NetworkManager", "Metered"),
    )
    if asked == wanted:
        connection.send(new_method_return(message, "v", (("u", metered),)))
    else:
        connection.send(new_error(message, "org.freedesktop.DBus.Error.UnknownMethod"))
