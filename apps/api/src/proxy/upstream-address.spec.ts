import { internalAddressOf, isInternalAddress } from './upstream-address';

describe('internal upstream addresses', () => {
  it.each(['127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:a9fe:a9fe'])('%s is internal', (address) => {
    expect(isInternalAddress(address)).toBe(true);
  });

  it.each(['8.8.8.8', '172.32.0.1', '1.1.1.1', '2606:4700::1111', '::ffff:808:808'])('%s is public', (address) => {
    expect(isInternalAddress(address)).toBe(false);
  });

  it('reads the host of a URL in every spelling URL accepts, and resolves names', async () => {
    expect(await internalAddressOf('http://169.254.169.254/latest')).toBe('169.254.169.254');
    expect(await internalAddressOf('http://2130706433:8080')).toBe('127.0.0.1'); // the decimal spelling of 127.0.0.1
    expect(await internalAddressOf('http://[::ffff:127.0.0.1]/')).toBe('::ffff:7f00:1');
    expect(await internalAddressOf('http://localhost:1234')).toMatch(/^(127\.0\.0\.1|::1)$/);
    expect(await internalAddressOf('https://8.8.8.8')).toBeUndefined();
  });
});
