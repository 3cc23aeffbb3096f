"""The rows of the USB 2.0 matrix (USB 2.0 chapter 9), state by state: :func:`usb2_matrix`."""

from __future__ import annotations

from .model import (
    ACK,
    ANY,
    DEVICE,
    ENDPOINT,
    IN,
    INTERFACE,
    OTHER,
    OUT,
    STALL,
    STATES,
    Case,
    Chapter9Device,
    Desc,
    Expect,
    Feature,
    Req,
    State,
    data,
    request_type,
)

__all__ = ["usb2_matrix", "usb2_rows", "NOT_PROBED"]


def _descriptor_cases(device: Chapter9Device, state: State) -> list[Case]:
    """GET_DESCRIPTOR and SET_DESCRIPTOR: specified in every state (§9.4.3, §9.4.8)."""
    cases = []
    get = request_type(IN, DEVICE)

    def add(value: int, index: int, length: int, expect: Expect, why: str) -> None:
        cases.append(Case(state, get, Req.GET_DESCRIPTOR, value, index, length, expect, why))

    required = device.required_descriptors()
    for (kind, number), raw in sorted(required.items()):
        language = 0x0409 if kind == Desc.STRING and number else 0
        lengths = sorted({len(raw), 255, 9 if len(raw) > 9 else 1} - {0})
        if kind == Desc.DEVICE:
            lengths = sorted({8, len(raw), device.control_max_packet})
        for length in lengths:
            add(kind << 8 | number, language, length, data(raw[:length]),
                "§9.4.3: the first wLength bytes of the descriptor")
    have = {kind for kind, _ in required}
    for kind in (Desc.CONFIGURATION, Desc.STRING, Desc.OTHER_SPEED_CONFIGURATION):
        if kind in have:
            number = max(n for k, n in required if k == kind) + 1
            add(kind << 8 | number, 0x0409 if kind == Desc.STRING else 0, 64, STALL,
                "§9.4.3: a descriptor index the device does not have is a Request Error")
    missing = [Desc.INTERFACE, Desc.ENDPOINT, Desc.INTERFACE_POWER, Desc.OTG, Desc.DEBUG, 0]
    missing += [kind for kind in (Desc.DEVICE_QUALIFIER, Desc.OTHER_SPEED_CONFIGURATION,
                                  Desc.BOS) if kind not in have]
    for kind in missing:
        add(kind << 8, 0, 64, STALL, "§9.4.3: only device, configuration, string (and "
            "per speed qualifier, other-speed, BOS) descriptors are read with GET_DESCRIPTOR")
    for recipient in (INTERFACE, ENDPOINT):
        cases.append(Case(state, request_type(IN, recipient), Req.GET_DESCRIPTOR,
                          Desc.DEVICE << 8, 0, 18, STALL,
                          "§9.4.3: standard descriptors are the device's (a class may define "
                          "its own for an interface; this device has none)"))
    cases.append(Case(state, request_type(OUT, DEVICE), Req.SET_DESCRIPTOR, Desc.DEVICE << 8,
                      0, 18, STALL if state != "default" else ANY, "§9.4.8: optional; a device "
                      "without it returns a Request Error", out_data=device.descriptors[1, 0]))
    return cases


def _status_cases(device: Chapter9Device, state: State) -> list[Case]:
    """GET_STATUS (§9.4.5) of every recipient, existing or not."""
    settled = state != "default"       # "not specified" in the Default state
    configured = state == "configured"
    get = Req.GET_STATUS
    cases = [Case(state, request_type(IN, DEVICE), get, 0, 0, 2,
                  data(device.device_status) if settled else ANY,
                  "§9.4.5: self-powered / remote wakeup bits")]
    for interface in (0, 1):
        exists = configured and interface == 0
        cases.append(Case(state, request_type(IN, INTERFACE), get, 0, interface, 2,
                          (data(b"\0\0") if exists else STALL) if settled else ANY,
                          "§9.4.5: interface status is zero; an interface the device does not "
                          "have (any in the Address state) is a Request Error"))
    for endpoint in (0x00, 0x80, *device.endpoints, *device.absent_endpoints()):
        exists = endpoint & 0x7F == 0 or (configured and endpoint in device.endpoints)
        cases.append(Case(state, request_type(IN, ENDPOINT), get, 0, endpoint, 2,
                          (data(b"\0\0") if exists else STALL) if settled else ANY,
                          "§9.4.5: halt bit; an endpoint the device does not have (in the "
                          "Address state any but endpoint 0) is a Request Error"))
    cases += [
        Case(state, request_type(IN, OTHER), get, 0, 0, 2, STALL if settled else ANY,
             "§9.2.7: a recipient the request is not defined for is a Request Error"),
        Case(state, request_type(IN, 4), get, 0, 0, 2, STALL if settled else ANY,
             "§9.3.1: recipients 4..31 are reserved: a Request Error"),
        Case(state, request_type(OUT, DEVICE), get, 0, 0, 0, STALL if settled else ANY,
             "§9.4: GET_STATUS is device-to-host; another direction is not a request"),
        Case(state, request_type(IN, DEVICE), get, 0, 0, 1, ANY,
             "§9.4.5: wLength other than 2 is not specified"),
        Case(state, request_type(IN, DEVICE), get, 1, 0, 2, ANY,
             "§9.4.5: wValue other than 0 is not specified"),
    ]
    return cases


def _halt_cases(device: Chapter9Device, state: State) -> list[Case]:
    """SET_FEATURE / CLEAR_FEATURE(ENDPOINT_HALT) of every endpoint (§9.4.1, §9.4.9, §9.4.5);
    a halted endpoint reports it, and the clear ends it."""
    configured = state == "configured"
    to_endpoint = request_type(OUT, ENDPOINT)
    cases = []
    for endpoint in (0x00, 0x80, *device.endpoints, *device.absent_endpoints()):
        exists = endpoint & 0x7F == 0 or (configured and endpoint in device.endpoints)
        cases.append(Case(state, to_endpoint, Req.CLEAR_FEATURE, Feature.ENDPOINT_HALT, endpoint,
                          0, ACK if exists else STALL,
                          "§9.4.1: clears the halt (a halt not set stays clear); an endpoint the "
                          "device does not have is a Request Error"))
        if state == "default":
            continue
        if endpoint & 0x7F == 0:
            cases.append(Case(state, to_endpoint, Req.SET_FEATURE, Feature.ENDPOINT_HALT,
                              endpoint, 0, ANY, "§9.4.5: a halt of the default control pipe "
                              "is neither required nor recommended"))
            continue
        status = request_type(IN, ENDPOINT)
        then = (Case(state, status, Req.GET_STATUS, 0, endpoint, 2, data(b"\1\0"),
                     "§9.4.5: bit 0 of a halted endpoint's status is set"),
                Case(state, to_endpoint, Req.CLEAR_FEATURE, Feature.ENDPOINT_HALT, endpoint, 0,
                     ACK, "§9.4.1: CLEAR_FEATURE(ENDPOINT_HALT) ends the halt"),
                Case(state, status, Req.GET_STATUS, 0, endpoint, 2, data(b"\0\0"),
                     "§9.4.5: the halt bit is clear again"))
        cases.append(Case(state, to_endpoint, Req.SET_FEATURE, Feature.ENDPOINT_HALT, endpoint,
                          0, ACK if exists else STALL,
                          "§9.4.9: a bulk endpoint can be halted; an endpoint the device does "
                          "not have (in the Address state any but endpoint 0) is a Request Error",
                          then=then if exists else ()))
    if state != "default":
        for request in (Req.SET_FEATURE, Req.CLEAR_FEATURE):
            cases.append(Case(state, to_endpoint, request, 1, 0x00, 0, STALL,
                              "§9.4.1/§9.4.9: no endpoint feature but ENDPOINT_HALT exists"))
    return cases


def _feature_cases(device: Chapter9Device, state: State) -> list[Case]:
    """Device and interface features (§9.4.1, §9.4.9): this device has none USB 2.0 defines
    besides TEST_MODE (see :data:`NOT_PROBED`)."""
    settled = state != "default"
    configuration = device.descriptors[Desc.CONFIGURATION, 0]
    wakeup = bool(configuration[7] & 0x20)
    cases = []
    for request in (Req.CLEAR_FEATURE, Req.SET_FEATURE):
        expect = (ACK if wakeup else STALL) if settled else ANY
        cases.append(Case(state, request_type(OUT, DEVICE), request,
                          Feature.DEVICE_REMOTE_WAKEUP, 0, 0, expect,
                          "§9.4.1/§9.4.9: remote wakeup exists only where bmAttributes says so"))
        cases.append(Case(state, request_type(OUT, DEVICE), request, 0, 0, 0,
                          STALL if settled else ANY,
                          "Table 9-6: selector 0 is an endpoint feature, not a device one"))
        if not device.superspeed:
            cases.append(Case(state, request_type(OUT, INTERFACE), request, 0, 0, 0,
                              STALL if settled else ANY,
                              "Table 9-6: USB 2.0 defines no interface feature"))
    cases.append(Case(state, request_type(OUT, DEVICE), Req.CLEAR_FEATURE, Feature.TEST_MODE,
                      0, 0, STALL if settled else ANY,
                      "§9.4.1: the Test_Mode feature cannot be cleared"))
    return cases


#: Requests the matrix does not send, and why.
NOT_PROBED = {
    "SET_FEATURE(TEST_MODE)": "USB 2.0 §9.4.9 has a high-speed device accept it in every state "
    "and enter the test mode after the status stage, left only by a power cycle; busprobe's "
    "device STALLs it (LUNA does not drive the PHY's test modes), a deviation",
    "SET_ADDRESS, SET_CONFIGURATION, SET_FEATURE in the Default state": "not specified, and "
    "they would change the state the rows after them are run in",
    "SET_ADDRESS in the Configured state": "not specified (§9.4.6)",
    "GET_* with wLength 0": "no data stage: allowed, never used by a host; the host models "
    "always run a data stage for device-to-host requests",
}


def _configuration_cases(device: Chapter9Device, state: State, address: int) -> list[Case]:
    """SET_ADDRESS, GET/SET_CONFIGURATION, GET/SET_INTERFACE, SYNCH_FRAME (§9.4.2, §9.4.4,
    §9.4.6, §9.4.7, §9.4.10, §9.4.11)."""
    settled, configured = state != "default", state == "configured"
    to_device, from_device = request_type(OUT, DEVICE), request_type(IN, DEVICE)
    to_interface, from_interface = request_type(OUT, INTERFACE), request_type(IN, INTERFACE)
    get_configuration = Case(state, from_device, Req.GET_CONFIGURATION, 0, 0, 1,
                             data(b"\1" if configured else b"\0") if settled else ANY,
                             "§9.4.2: the configuration value, 0 in the Address state")
    cases = [get_configuration,
             Case(state, from_interface, Req.GET_CONFIGURATION, 0, 0, 1,
                  STALL if settled else ANY, "§9.2.7: defined for the device only")]
    if state == "default":
        cases.append(Case(state, to_device, Req.SET_ADDRESS, address, 0, 0, ACK,
                          "§9.4.6: the Default state goes to the Address state", leaves="address"))
    elif state == "address":
        cases += [
            Case(state, to_device, Req.SET_ADDRESS, address + 2, 0, 0, ACK,
                 "§9.4.6: a new address in the Address state"),
            Case(state, to_device, Req.SET_ADDRESS, 0, 0, 0, ACK,
                 "§9.4.6: address 0 returns the device to the Default state", leaves="default"),
        ]
    if settled:
        cases.append(Case(state, to_interface, Req.SET_ADDRESS, address, 0, 0, STALL,
                          "§9.2.7: defined for the device only"))
        other = "address" if configured else "configured"
        cases += [
            Case(state, to_device, Req.SET_CONFIGURATION, int(not configured), 0, 0, ACK,
                 "§9.4.7: configuration 0 is the Address state, 1 the Configured state",
                 leaves=other, then=(Case(other, from_device, Req.GET_CONFIGURATION, 0, 0, 1,
                                          data(b"\0" if configured else b"\1"),
                                          "§9.4.2: the configuration just set"),)),
            Case(state, to_device, Req.SET_CONFIGURATION, int(configured), 0, 0, ACK,
                 "§9.4.7: the configuration the device is in"),
            Case(state, to_device, Req.SET_CONFIGURATION, 2, 0, 0, STALL,
                 "§9.4.7: a configuration value no descriptor has is a Request Error"),
            Case(state, to_interface, Req.SET_CONFIGURATION, 1, 0, 0, STALL,
                 "§9.2.7: defined for the device only"),
        ]
    for interface, alternate in ((0, 0), (0, 1), (1, 0)):
        ok = configured and (interface, alternate) == (0, 0)
        if alternate == 0:
            cases.append(Case(state, from_interface, Req.GET_INTERFACE, 0, interface, 1,
                              (data(b"\0") if ok else STALL) if settled else ANY,
                              "§9.4.4: the alternate setting; Request Error in the Address "
                              "state and for an interface the device does not have"))
        cases.append(Case(state, to_interface, Req.SET_INTERFACE, alternate, interface, 0,
                          (ACK if ok else STALL) if settled else ANY,
                          "§9.4.10: the only alternate setting is 0; Request Error in the "
                          "Address state and for an interface or setting that does not exist"))
    cases.append(Case(state, from_device, Req.GET_INTERFACE, 0, 0, 1, STALL if settled else ANY,
                      "§9.2.7: defined for an interface only"))
    for endpoint in (0x00, *device.endpoints):
        cases.append(Case(state, request_type(IN, ENDPOINT), Req.SYNCH_FRAME, 0, endpoint, 2,
                          STALL if settled else ANY,
                          "§9.4.11: only isochronous endpoints take SYNCH_FRAME; others return a "
                          "Request Error"))
    return cases


def _unknown_cases(device: Chapter9Device, state: State) -> list[Case]:
    """Request codes chapter 9 does not define (for this speed) are Request Errors (§9.2.7)."""
    codes = [2, 4, 13, 0x2F, 0xFF] + ([] if device.superspeed else [Req.SET_SEL,
                                                                   Req.SET_ISOCH_DELAY])
    expect = STALL if state != "default" else ANY
    return [Case(state, request_type(direction, DEVICE), code, 0, 0, 2 if direction else 0,
                 expect, "§9.2.7: a request not defined for the device is a Request Error")
            for code in codes for direction in (IN, OUT)]


def usb2_rows(device: Chapter9Device, state: State, address: int) -> list[Case]:
    """The USB 2.0 rows of one state (``address``: the one SET_ADDRESS gives the device)."""
    return (_descriptor_cases(device, state) + _status_cases(device, state)
            + _feature_cases(device, state) + _halt_cases(device, state)
            + _unknown_cases(device, state)
            # Last: they leave the state.
            + _configuration_cases(device, state, address))


def usb2_matrix(device: Chapter9Device, address: int) -> list[Case]:
    """Every row for a USB 2.0 device, state by state (Default first; ``address`` is the one
    SET_ADDRESS gives it)."""
    return [case for state in STATES for case in usb2_rows(device, state, address)]
